#!/bin/sh
# Fetch the sources the rulers in this folder were written for, check their sha256 and unpack
# them under DEST (default ../benchdata beside the project). Nothing of this lands in the repository.
set -eu
DEST=${1:-$(cd "$(dirname "$0")/../../.." && pwd)/benchdata}
mkdir -p "$DEST" && cd "$DEST"
[ -f requests-2.32.3.tar.gz ] || pip download requests==2.32.3 --no-deps --no-binary :all: -d .
[ -f semver-7.6.3.tgz ] || npm pack semver@7.6.3
[ -f golang-github-gorilla-mux-dev_1.8.0-1_all.deb ] || apt-get download golang-github-gorilla-mux-dev=1.8.0-1
[ -f git-doc_1%3a2.39.5-0+deb12u3_all.deb ] || apt-get download git-doc=1:2.39.5-0+deb12u3
sha256sum -c <<SUMS
55365417734eb18255590a9ff9eb97e9e1da868d4ccd6402399eaf68af20a760  requests-2.32.3.tar.gz
376d2ca2c941fc5a37e9ac3ec65302e5e421e2cc1ee3dee57a854d2bd9bee125  semver-7.6.3.tgz
0880a4019fe68496a0e0a749c2948c029e489f49edd448bed2fedaba33f848c2  golang-github-gorilla-mux-dev_1.8.0-1_all.deb
3c89668a11053a6bafade3de1f611f4613db31e082af63f43d8c5b69ad8795ec  git-doc_1%3a2.39.5-0+deb12u3_all.deb
SUMS
[ -d requests-2.32.3 ] || tar xzf requests-2.32.3.tar.gz
[ -d semver-7.6.3 ] || { mkdir semver-7.6.3 && tar xzf semver-7.6.3.tgz -C semver-7.6.3; }
[ -d gorilla-mux ] || dpkg -x golang-github-gorilla-mux-dev_1.8.0-1_all.deb gorilla-mux
# git 2.39's manual (ruler docs of bench_quality.py): its asciidoc .txt sources, which index --dir reads
[ -d git-doc ] || dpkg -x git-doc_1%3a2.39.5-0+deb12u3_all.deb git-doc
echo "roots: $DEST/requests-2.32.3  $DEST/semver-7.6.3/package  $DEST/gorilla-mux/usr/share/gocode/src/github.com/gorilla/mux"
echo "docs:  $DEST/git-doc/usr/share/doc/git-doc"
