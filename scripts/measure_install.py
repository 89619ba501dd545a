"""What a runtime-only `pip install .` weighs: a fresh venv, the project installed into it (no
extras), then `du -sm` of the whole venv and the size of each installed distribution.

    python scripts/measure_install.py [--rev REV] [--extras analysis] [--constraints constraints.txt]
                                      [--top 20] [--json]

``--rev`` measures another commit (``git archive`` of it; default: the working tree as it is).
``--constraints`` passes ``-c FILE`` to pip (default: the repository's constraints.txt when the
tree measured has one). The venv's own pip and setuptools are counted in the total (they are in
every venv: ~15 MB); the per-distribution sizes add up each one's files from its RECORD.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SIZES = r'''
import importlib.metadata as md, json, os
out = {}
for d in md.distributions():
    total = 0
    for f in d.files or []:
        p = f.locate()
        if os.path.isfile(p):
            total += os.path.getsize(p)
    out[d.metadata["Name"]] = [d.version, total]
print(json.dumps(out))
'''


def du_mb(path: Path) -> int:
    return int(subprocess.run(["du", "-sm", str(path)], capture_output=True, text=True,
                              check=True).stdout.split()[0])


def source_tree(rev: str | None, tmp: Path) -> Path:
    if rev is None:
        return ROOT
    out = tmp / "src"
    out.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
    return out


def measure(src: Path, extras: str, constraints: Path | None, tmp: Path) -> dict:
    env_dir = tmp / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    target = f"{src}[{extras}]" if extras else str(src)
    cmd = [str(py), "-m", "pip", "install", "-q", target]
    if constraints is not None:
        cmd += ["-c", str(constraints)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"pip install failed:\n{done.stderr}")
    sizes = json.loads(subprocess.run([str(py), "-c", SIZES], capture_output=True, text=True,
                                      check=True).stdout)
    site = next(env_dir.glob("lib/python*/site-packages"))
    return {"venv_mb": du_mb(env_dir), "site_packages_mb": du_mb(site),
            "distributions": {k: {"version": v, "mb": round(b / 2**20, 1)}
                              for k, (v, b) in sorted(sizes.items(), key=lambda kv: -kv[1][1])}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", help="a commit to measure instead of the working tree")
    ap.add_argument("--extras", default="", help="extras to install too (default none)")
    ap.add_argument("--constraints", type=Path, help="pip -c FILE (default: the tree's constraints.txt)")
    ap.add_argument("--top", type=int, default=20, help="distributions listed (default 20)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        src = source_tree(args.rev, tmp)
        constraints = args.constraints
        if constraints is None and (src / "constraints.txt").is_file():
            constraints = src / "constraints.txt"
        rev = args.rev or subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                         capture_output=True, text=True).stdout.strip() + " (work tree)"
        report = {"rev": rev, "extras": args.extras, "constraints": str(constraints) if constraints else None,
                  "python": sys.version.split()[0], **measure(src, args.extras, constraints, tmp)}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"# rev {report['rev']}  python {report['python']}  extras [{args.extras}]  "
          f"constraints {report['constraints']}")
    print(f"venv total (du -sm): {report['venv_mb']} MB   site-packages: {report['site_packages_mb']} MB")
    for name, d in list(report["distributions"].items())[:args.top]:
        print(f"{d['mb']:>8.1f} MB  {name} {d['version']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
