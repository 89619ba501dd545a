#!/bin/sh
# Ablation of code ranking and refusal on the DEV halves only (issue 14): one bench_code.py run
# per variant, each over a copy of this checkout's package with one part switched off or
# re-weighted. Variants:
#   main-rank  services/{codequery,retrieval,search}.py as at MAIN (default be03346): main's
#              ranking and refusal, everything else (parser, naming) as here
#   full       this checkout as it is
#   no-bm25f   LEXICAL_WEIGHT 0 (no keyword scoring), refusal as here
#   main-refusal  services/codequery.py as at MAIN (main's coverage refusal), ranking as here
#   bm25f-0.25 / bm25f-1.0  LEXICAL_WEIGHT changed, the rest as here
#   class-0.7  services/{coderank,retrieval,search}.py as at CLASS (default bf18003): classes
#              ranked at 0.7 of their score, the rule this ablation removed
# Usage: sh scripts/ablate_code.sh OUT [DB_DIR]   (DB_DIR: databases to copy per variant, so a
# run re-uses an index built by the same parser version; without it each variant indexes anew)
set -eu
OUT=$1
DB=${2:-}
MAIN=${MAIN:-be03346}
CLASS=${CLASS:-bf18003}
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-python}
mkdir -p "$OUT"
variant() {
  rm -rf "$OUT/$1" && mkdir -p "$OUT/$1"
  cp -r "$HERE/seahorse" "$OUT/$1/seahorse"
  find "$OUT/$1" -name __pycache__ -prune -exec rm -rf {} +
  if [ -n "$DB" ]; then cp -r "$DB" "$OUT/$1/db"; fi
}
rank="$OUT/VAR/seahorse/services/coderank.py"
variant main-rank
for f in codequery retrieval search; do
  git -C "$HERE" show "$MAIN:seahorse/services/$f.py" > "$OUT/main-rank/seahorse/services/$f.py"
done
variant full
variant no-bm25f
sed -i 's/^LEXICAL_WEIGHT = [0-9.]*/LEXICAL_WEIGHT = 0.0/' "$(echo "$rank" | sed s/VAR/no-bm25f/)"
variant main-refusal
git -C "$HERE" show "$MAIN:seahorse/services/codequery.py" > "$OUT/main-refusal/seahorse/services/codequery.py"
variant bm25f-0.25
sed -i 's/^LEXICAL_WEIGHT = [0-9.]*/LEXICAL_WEIGHT = 0.25/' "$(echo "$rank" | sed s/VAR/bm25f-0.25/)"
variant bm25f-1.0
sed -i 's/^LEXICAL_WEIGHT = [0-9.]*/LEXICAL_WEIGHT = 1.0/' "$(echo "$rank" | sed s/VAR/bm25f-1.0/)"
variant class-0.7
for f in coderank retrieval search; do
  git -C "$HERE" show "$CLASS:seahorse/services/$f.py" > "$OUT/class-0.7/seahorse/services/$f.py"
done
for v in main-rank full no-bm25f main-refusal bm25f-0.25 bm25f-1.0 class-0.7; do
  dbarg=""
  if [ -n "$DB" ]; then dbarg="--db-dir $OUT/$v/db"; fi
  # shellcheck disable=SC2086
  PYTHONPATH="$OUT/$v" "$PY" "$HERE/scripts/bench_code.py" --split dev --only Seahorse \
    --corpus flask --corpus requests --corpus mux --corpus semver $dbarg > "$OUT/$v.txt"
  echo "== $v"; grep -E "^## |dev en  |absent en|lost to refusal" "$OUT/$v.txt"
done
