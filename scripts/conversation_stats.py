"""What LoCoMo's dev questions say about who and when (the figures behind retrieval's speaker
and date focus, issue 22): among questions naming exactly one of their conversation's speakers,
the share of evidence turns that speaker spoke; how many questions name a day or a month of a
year (``timeline.dates_in``); the share of evidence turns, and of all turns, that end in a
question mark. Reads ../shared/bench/memory/locomo_dev.json (evaluation only, never copied).

    python scripts/conversation_stats.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benchlib  # noqa: E402
from bench_memory import CATEGORIES, gold_of, turns_of  # noqa: E402

from seahorse.core.timeline import dates_in  # noqa: E402

DATA = HERE.parent.parent / "shared" / "bench" / "memory" / "locomo_dev.json"


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DATA
    data = json.loads(path.read_text())
    print(f"# {path.name}, fingerprint {benchlib.fingerprint([path])}")
    questions = named = evidence = by_named = dated = 0
    turns_all = turns_asking = ev_all = ev_asking = 0
    for sample in data:
        turns = turns_of(sample)
        by_id = {t["id"]: t for t in turns}
        speakers = sorted({t["speaker"] for t in turns})
        turns_all += len(turns)
        turns_asking += sum(t["text"].rstrip().endswith("?") for t in turns)
        for q in sample["qa"]:
            if q.get("category") not in CATEGORIES:
                continue
            questions += 1
            dated += bool(dates_in(q["question"]))
            gold = [by_id[g] for g in gold_of(q) if g in by_id]
            ev_all += len(gold)
            ev_asking += sum(t["text"].rstrip().endswith("?") for t in gold)
            low = q["question"].casefold()
            who = [s for s in speakers if s.split()[0].casefold() in low]
            if len(who) != 1:
                continue
            named += 1
            evidence += len(gold)
            by_named += sum(t["speaker"] == who[0] for t in gold)
    print(f"questions (categories 1-4): {questions}")
    print(f"naming exactly one speaker: {named}; their evidence turns spoken by that speaker: "
          f"{by_named} of {evidence} ({by_named / evidence:.1%})")
    print(f"naming a day or a month of a year: {dated}")
    print(f"turns ending in '?': {turns_asking / turns_all:.1%} of all turns, "
          f"{ev_asking / ev_all:.1%} of evidence turns")


if __name__ == "__main__":
    main()
