#!/bin/sh
# Ablation of code ranking and refusal on the DEV halves only (issue 14): one bench_code.py run
# per variant, each over a copy of this checkout's package with one part switched off,
# re-weighted or replaced. Variants:
#   main-rank  services/{codequery,retrieval,search}.py as at MAIN (default be03346): main's
#              ranking and refusal, everything else (parser, naming) as at BASE (default
#              47d2ce5, the tree this variant was first measured in: later trees changed the
#              services' interfaces, e.g. search pages)
#   full       this checkout as it is
#   no-bm25f   LEXICAL_WEIGHT 0 (no keyword scoring), refusal as here
#   main-refusal  main's coverage refusal (under half the distinctive words found, or two or
#              more missing and over a quarter), no vouching by meaning or words; the rest as here
#   bm25f-0.25 / bm25f-1.0  LEXICAL_WEIGHT changed, the rest as here
#   class-0.7  services/{coderank,retrieval,search}.py as at CLASS (default bf18003), the rest
#              as at BASE: classes ranked at 0.7 of their score, a rule this ablation removed
#   rrf        the seeds, the walk's lift and BM25F fused by reciprocal rank (1 / (60 + rank),
#              BM25F weighted LEXICAL_WEIGHT) instead of summed min-max scores
#   no-test-prior  tests and examples not halved (the prior against test/example paths off)
#   walk-0.5   the walk's lift at half the weight of the seeds
#   question-words  the leading question words ("how does", "where is", ...) dropped from the
#              text embedded for the dense seed
#   no-lexical-vouch  refusal without LEXICAL_VOUCH (only the cosine vouches for a question with
#              a missing word), the rest as here
#   class-lift / class-yield  a class (or Go type) in the ranked pool scored by its best member
#              there (lift: the higher of the two; yield: just behind that member), then re-sorted
#   cos-0.5 / cos-0.5-no-lexical-vouch  a stress of the refusal, not a candidate: DENSE_VOUCH
#              0.5 (as if the embedder's cosines ran 0.08 lower on a repository than on the
#              dev halves), with and without the lexical voucher
# Usage: sh scripts/ablate_code.sh OUT [DB_DIR]   (DB_DIR: databases to copy per variant, so a
# run re-uses an index built by the same parser version; without it each variant indexes anew)
# VARIANTS="full rrf" runs only those.
set -eu
OUT=$1
DB=${2:-}
MAIN=${MAIN:-be03346}
CLASS=${CLASS:-bf18003}
BASE=${BASE:-47d2ce5}
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-python}
ALL="main-rank full no-bm25f main-refusal bm25f-0.25 bm25f-1.0 class-0.7 rrf no-test-prior walk-0.5
question-words class-lift class-yield no-lexical-vouch cos-0.5 cos-0.5-no-lexical-vouch"
VARIANTS=${VARIANTS:-$ALL}
mkdir -p "$OUT"
variant() {  # variant NAME [TREE]: this checkout's package, or the one at commit TREE
  rm -rf "$OUT/$1" && mkdir -p "$OUT/$1"
  if [ -n "${2:-}" ]; then
    git -C "$HERE" archive "$2" seahorse | tar -x -C "$OUT/$1"
  else
    cp -r "$HERE/seahorse" "$OUT/$1/seahorse"
  fi
  find "$OUT/$1" -name __pycache__ -prune -exec rm -rf {} +
  if [ -n "$DB" ]; then cp -r "$DB" "$OUT/$1/db"; fi
}
# patch VARIANT FILE OLD NEW: replace the one line-exact occurrence of OLD (fails if not one)
patch() {
  "$PY" - "$OUT/$1/seahorse/services/$2" "$3" "$4" <<'EOF'
import sys
from pathlib import Path
path, old, new = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
text = path.read_text()
if text.count(old) != 1:
    sys.exit(f"ablate_code.sh: {old!r} occurs {text.count(old)} times in {path}, not once")
path.write_text(text.replace(old, new))
EOF
}
weight() {  # weight VARIANT VALUE: LEXICAL_WEIGHT set to VALUE
  sed -i "s/^LEXICAL_WEIGHT = [0-9.]*/LEXICAL_WEIGHT = $2/" "$OUT/$1/seahorse/services/coderank.py"
}
members() {  # members VARIANT lift|yield: classes scored by their best member in the pool
  patch "$1" search.py "                h.code = fields[h.id]" "                h.code = fields[h.id]
        _by_members(result.hits, \"$2\")"
  cat >> "$OUT/$1/seahorse/services/search.py" <<'EOF'


def _by_members(hits: list, mode: str) -> None:
    import os
    best: dict = {}
    for h in hits:
        sym = (h.code or {}).get("symbol")
        if sym and "." in sym:
            key = (os.path.dirname(h.code["path"]), sym.rsplit(".", 1)[0])
            best[key] = max(best.get(key, float("-inf")), h.score)
    for h in hits:
        if (h.code or {}).get("symbol_kind") == "class":
            m = best.get((os.path.dirname(h.code["path"]), h.code["symbol"]))
            if m is not None:
                h.score = max(h.score, m) if mode == "lift" else min(h.score, m - 1e-9)
    hits.sort(key=lambda h: -h.score)
EOF
}
novouch() {  # novouch VARIANT: no lexical voucher
  sed -i 's/^LEXICAL_VOUCH = [0-9]*/LEXICAL_VOUCH = 10**9/' "$OUT/$1/seahorse/services/codequery.py"
}
cosine() {  # cosine VARIANT VALUE: DENSE_VOUCH set to VALUE
  sed -i "s/^DENSE_VOUCH = [0-9.]*/DENSE_VOUCH = $2/" "$OUT/$1/seahorse/services/codequery.py"
}
for v in $VARIANTS; do
  case $v in main-rank|class-0.7) variant "$v" "$BASE" ;; *) variant "$v" ;; esac
  case $v in
    main-rank)
      for f in codequery retrieval search; do
        git -C "$HERE" show "$MAIN:seahorse/services/$f.py" > "$OUT/$v/seahorse/services/$f.py"
      done ;;
    full) ;;
    no-bm25f) weight "$v" 0.0 ;;
    main-refusal)
      patch "$v" codequery.py "if scoped and top_dense is not None:" "if False:" ;;
    bm25f-0.25) weight "$v" 0.25 ;;
    bm25f-1.0) weight "$v" 1.0 ;;
    class-0.7)
      for f in coderank retrieval search; do
        git -C "$HERE" show "$CLASS:seahorse/services/$f.py" > "$OUT/$v/seahorse/services/$f.py"
      done ;;
    rrf)
      patch "$v" retrieval.py "out = minmax(seeds[cand], FLAT) + minmax(lift, FLAT)" \
        "out = _rrf(seeds[cand]) + _rrf(lift)"
      patch "$v" retrieval.py "out = out + coderank.LEXICAL_WEIGHT * minmax(lex[cand], FLAT)" \
        "out = out + coderank.LEXICAL_WEIGHT * _rrf(lex[cand])"
      cat >> "$OUT/$v/seahorse/services/retrieval.py" <<'EOF'


def _rrf(x: np.ndarray) -> np.ndarray:
    rank = np.empty(len(x))
    rank[np.argsort(-x, kind="stable")] = np.arange(len(x))
    return np.where(x > 0, 1.0 / (60 + rank), 0.0)
EOF
      ;;
    no-test-prior)
      patch "$v" retrieval.py "out = np.where(index.secondary[cand], out * SECONDARY_WEIGHT, out)" "" ;;
    walk-0.5)
      patch "$v" retrieval.py "out = minmax(seeds[cand], FLAT) + minmax(lift, FLAT)" \
        "out = minmax(seeds[cand], FLAT) + 0.5 * minmax(lift, FLAT)" ;;
    question-words)
      patch "$v" retrieval.py "q = embedder.embed([query])[0]" \
        "q = embedder.embed([re.sub(r'^\s*(how|what|where|which|why|when|who)\b(\s+(does|do|is|are|was|were|can|should|would|will|did))?\s*', '', query, flags=re.I) if code else query])[0]" ;;
    class-lift|class-yield) members "$v" "${v#class-}" ;;
    no-lexical-vouch) novouch "$v" ;;
    cos-0.5) cosine "$v" 0.5 ;;
    cos-0.5-no-lexical-vouch) cosine "$v" 0.5 && novouch "$v" ;;
    *) echo "unknown variant $v" >&2; exit 2 ;;
  esac
done
for v in $VARIANTS; do
  dbarg=""
  if [ -n "$DB" ]; then dbarg="--db-dir $OUT/$v/db"; fi
  # shellcheck disable=SC2086
  PYTHONPATH="$OUT/$v" "$PY" "$HERE/scripts/bench_code.py" --split dev --only Seahorse \
    --corpus flask --corpus requests --corpus mux --corpus semver $dbarg > "$OUT/$v.txt"
  echo "== $v"; grep -E "^## |dev en  |absent en|lost to refusal" "$OUT/$v.txt"
done
