"""Part of stage 3, rank: passages linked by names to the question or to the best passage rise.
The walk reaches them, but a passage spreads its mass over all its phrases, so one that merely
reads like the question stayed ahead. Three links, all read among the best BRIDGE_TOP passages
and none raising a passage above the best one (the first hit, its refusal and its confidence
never change):

* the question names the passage's page: its document is titled by a name the question asks
  ("Which plant is larger, the Pterocarya or the Cotula?" -> the page "Pterocarya"), or by a
  name the question writes as the title does (``_title_written``: "Are Christopher Nolan and
  Sathish Kalathil both film directors?" -> the page "Christopher Nolan");
* a chain's second hop through a shared name: the passage shares with the best a name that no
  third passage of the store holds (the Bubye River's passage names Zimbabwe, so does Victoria
  Falls');
* a chain's second hop through a title: the best passage names the passage's page ("Gisvi was
  born in Windhoek" -> the page "Windhoek"), the name held by at most TITLE_HELD passages.

A name is a phrase written capitalised ("Valdoria", or "Light" of "Cape Morrow Light"), not a
date or a compass point (refusal.PLAIN_NAMES); a name written in lower case ("kestrel") is not read as
one. A title names a page whole or before its parenthesis or its first comma ("Brother (Pearl
Jam song)", "West Chicago, Illinois"). The reads: the names' texts and the candidates' document
rows, one statement each, and the document rows serve the hits' evidence too."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..core.timeline import exact_first
from ..mechanisms.graph import top_positions
from ..store import Store
from ..text import normalise_phrase
from .hits import Hit
from .refusal import names_one_thing, opens_sentence
from .seed import Seeds
from .state import RetrievalIndex

# The second hop of a chain: among the best BRIDGE_TOP passages, one sharing a name with the
# first that no other passage of the store holds (a bridge: "the waterfall in the country where
# the Bubye River is found" -> the Bubye's passage names Zimbabwe -> Victoria Falls' passage
# names it too) ranks at (1 + BRIDGE) x its score, never above the first. Names only (written
# capitalised) and not the question's own: a shared rare common word is no chain.
# bench_quality.py --splits dev, e5-enpt, 2026-12-06, R@2 (R@5) before -> after: tiny MuSiQue
# 0.587 -> 0.645 (0.803 -> 0.843), tiny HotpotQA 0.800 -> 0.820, HotpotQA 2k 0.740 -> 0.770, 10k
# 0.770 -> 0.790, MuSiQue 2k 0.580 -> 0.578 (0.782 -> 0.792), 10k 0.560 -> 0.565 (0.768 ->
# 0.778), agent memories' two-note all@2 0.485 -> 0.576, LoCoMo within 0.001. BRIDGE 1: tiny
# MuSiQue 0.605; 4: 10k MuSiQue 0.543. Any rare phrase (common words too) instead of names: 10k
# MuSiQue 0.535, LoCoMo R@5 -0.008.
BRIDGE = 2.0
BRIDGE_TOP = 10
# A second hop through a title: a passage of a document titled by a name the best passage gives
# (held by at most TITLE_HELD passages of the store, so no hub: "Git" in git's manual) ranks as
# a bridge does. Wikipedia's pages, a manual's, a wiki's, link a name to the page about it: "the
# hotel in Gisvi's city of birth" -> Gisvi's passage names Namibia -> the page "Namibia". It
# finds what the shared-name rule cannot once the name is held by more than two ("Somalia" in
# a 2k store). bench_quality.py --splits dev, e5-enpt, 2026-12-07, R@2 / R@5 before -> after:
# tiny MuSiQue 0.655 / 0.840 -> 0.665 / 0.850, tiny HotpotQA 0.830 / 0.970 -> 0.840 / 0.980,
# MuSiQue 2k 0.588 -> 0.598 (R@2), HotpotQA 2k 0.770 / 0.960 -> 0.780 / 0.970, 10k HotpotQA /
# MuSiQue R@5 0.930 -> 0.950, 0.778 -> 0.788, 100k 0.920 -> 0.930, 0.778 -> 0.788; every other
# ruler the same (stores without titles: conversations, notes). 5 and 20 read the same but for
# one question a ruler; with no bound git's manual lost a multi-passage place ("Git", "git(1)").
# The same bound keeps a page the question names from being a hub's.
TITLE_HELD = 10
# A page the best passage or the question names by its title is a surer link than a passage
# that shares a name with the best: when both were raised, the shared-name ones stay below the
# titled ones (``_titles_first``). Tiny HotpotQA "What position did the receiver of the 2007
# FIFA U-20 Golden Shoe play?": the page "Sergio Agüero" was raised, but a women's championship
# raised through "Ball" stayed ahead of it; "Who was Audrey Williams pregnant with during the
# recording of 'Dear Brother'?": the page "Audrey Williams" stayed 6th under three songs raised
# through "Jack Shook", "Turner" and "Fred Rose". bench_quality.py --splits dev, e5-enpt,
# 2026-12-07, R@2 (R@5) before -> the best's pages first -> the question's too: tiny MuSiQue
# 0.687 -> 0.693 -> 0.693, tiny HotpotQA 0.860 -> 0.890 -> 0.890 (0.980 -> 0.990), HotpotQA 2k
# 0.830 -> 0.870 -> 0.890, 10k 0.810 -> 0.840 -> 0.860, 100k 0.820 -> 0.850 -> 0.860; every other
# row the same. The question's pages first cost tiny MuSiQue R@2 0.020 until a name that ends
# or sits inside a longer name of the question stopped naming a page ("Virginia" of "West
# Virginia": ``_ends_a_name``; "Meehan" of "Meehan Bonnar", a longer question phrase the store
# holds: ``_inside``).
# A page the best passage names by its title but found deeper, among the passages ranked
# BRIDGE_TOP + 1 to DEEP_TOP, enters the best five (just below the fourth), never higher: the
# second hop the walk left further down ("the country Ceelmakoile is located in" -> the page
# "Somalia", 23rd). bench_quality.py --splits dev, 2026-12-07: MuSiQue 2k R@5 0.798 -> 0.808,
# 100k HotpotQA 0.940 -> 0.960, MiniLM's HotpotQA 2k 0.900 -> 0.910; every other ruler the same
# (tiny stores hold at most 20; 50 read as 30).
DEEP_TOP = 30
DEEP_SLOT = 4
TITLE_QUALIFIER = re.compile(r"\s*\([^()]*\)\s*$")
# The question's names are the phrases the extractor reads off it, and it does not always read a
# title whole: "Christopher Nolan and Sathish Kalathil" came out as one span, a phrase no
# passage holds, so the page "Christopher Nolan" ranked 4th under its director's filmography. A
# page whose title the question writes -- whole words, capitalised as the title is, a name of
# three letters or more (refusal.names_one_thing) -- is a page the question names too.
# bench_quality.py --splits dev, e5-enpt, 2026-12-07, R@2 (R@5) before -> after: tiny MuSiQue
# 0.680 -> 0.687, tiny HotpotQA 0.830 -> 0.860, MuSiQue 2k 0.587 -> 0.593, HotpotQA 2k 0.800 ->
# 0.830 (0.960 -> 0.970), 10k HotpotQA 0.790 -> 0.810 and MuSiQue 0.573 -> 0.580, 100k HotpotQA
# 0.800 -> 0.820 and MuSiQue 0.587 -> 0.580; agent memories, LoCoMo (three ways), git's manual
# and code the same (docs/benchmarks.md, "A title the question writes"). A page whose title is
# held by many passages is still raised: the raise reorders the best BRIDGE_TOP only, never
# above the best, and a question that writes a page's title asks about that page.


@dataclass
class Linked:
    """What :func:`raise_linked` raised, and the document rows it read (by id)."""
    second_hop: dict[int, tuple[int, str, bool]] = field(default_factory=dict)  # vertex -> (best
    # passage's node id, the name, whether it is the vertex's title)
    asked_title: dict[int, str] = field(default_factory=dict)  # vertex -> the question's name
    docs: dict[int, tuple] = field(default_factory=dict)


def raise_linked(index: RetrievalIndex, store: Store, seeds: Seeds, cand: np.ndarray,
                 scores: np.ndarray, top_k: int = 0, question: str = "") -> Linked:
    """Raise, in place, the passages among the best BRIDGE_TOP that the question (``question``,
    as written) names by their titles, or that are the next link of a chain from the best (see
    the module's docstring), each at (1 + BRIDGE) x its score and never above the best. The
    document rows read cover the best ``top_k`` candidates after the raise (a raise lifts only
    the best BRIDGE_TOP passages), so the hits' evidence reads none again."""
    g = index.graph
    ranked = np.where(index.kind_mask(("passage",))[cand], scores, 0.0)
    order = _best_first(ranked, DEEP_TOP)
    order, deep = (o[ranked[o] > 0] for o in (order[:BRIDGE_TOP], order[BRIDGE_TOP:]))
    if len(order) < 2:  # a first, and another to raise
        return Linked()
    best = int(cand[order[0]])
    said = np.fromiter(seeds.asked, np.int64) if seeds.asked else np.zeros(0, np.int64)
    cols, w = g.adj.row(best)
    cols = cols[(w > 0) & (g.kinds[cols] == "phrase")]  # a patched row keeps removed edges at 0
    cols = cols[~np.isin(cols, said)]
    cols, asked = (c[index.passage_count[c] <= TITLE_HELD] for c in (cols, said))
    both = np.concatenate([cols, said])
    texts = store.phrase_texts(g.node_ids[both].tolist()) if len(both) else {}
    text = {int(v): texts.get(int(node), "") for v, node in zip(both.tolist(), g.node_ids[both].tolist())}
    cols, asked = (np.array([v for v in c.tolist() if names_one_thing(text[v])], dtype=np.int64)
                   for c in (cols, asked))
    writes_names = any(c.isupper() for c in question)  # a title written as a name has a capital
    if not len(cols) and not len(asked) and not writes_names:
        return Linked()
    shared_names = cols[index.passage_count[cols] == 2]
    titled = {_key(text[v]): text[v] for v in cols.tolist()}
    longer = [_key(text[v]) for v in said.tolist()]  # the question's phrases the store holds

    def own_name(name: str) -> bool:
        """Whether the question gives ``name`` as a name of its own, not as the end of a longer
        one ("Virginia" of "West Virginia") or a part of a longer one the store holds ("Meehan"
        of "Meehan Bonnar")."""
        return not _inside(_key(name), longer) and not _ends_a_name(name, question)

    questioned = {_key(text[v]): text[v] for v in asked.tolist() if own_name(text[v])}
    leaders = _best_first(scores, top_k)  # of any kind, before the raise
    read = np.concatenate([cand[order], cand[deep], cand[leaders]])
    docs = store.documents_of(np.unique(g.doc_ids[read]).tolist())
    first, first_doc = int(g.node_ids[best]), int(g.doc_ids[best])
    ceiling = float(scores[order[0]]) * (1.0 - 1e-6)
    out = Linked(docs=docs)

    def page(v: int, names: dict[str, str], own: bool = True) -> str | None:
        """The name among ``names`` that titles ``v``'s document (``own``: the best's too)."""
        doc = docs.get(int(g.doc_ids[v]))
        return _title_named(doc[2] if doc and (own or int(doc[0]) != first_doc) else None, names)

    def asked_page(v: int) -> str | None:
        """The name the question gives ``v``'s page by: a phrase of it the store holds, or the
        title as the question writes it (:func:`_title_written`), a name of its own."""
        if name := page(v, questioned):
            return name
        doc = docs.get(int(g.doc_ids[v]))
        name = _title_written(doc[2], question) if writes_names and doc and doc[2] else None
        return name if name and own_name(name) else None

    chain = len(order) >= 3  # a second hop: more than one to choose it from
    for k, v in zip(order[1:], cand[order[1:]].tolist()):
        if name := asked_page(v):
            out.asked_title[v] = name
        elif not chain:
            continue
        elif name := page(v, titled, own=False):
            out.second_hop[v] = (first, name, True)
        else:
            held, w = g.adj.row(v)
            shared = shared_names[np.isin(shared_names, held[w > 0])]
            if not len(shared):
                continue
            out.second_hop[v] = (first, text[int(shared[0])], False)
        scores[k] = min(scores[k] * (1.0 + BRIDGE), ceiling)
    _titles_first(cand, scores, order, out.second_hop, out.asked_title)
    if chain and titled and len(deep):  # only the best BRIDGE_TOP were raised: the best
        # DEEP_SLOT now are among them and the first DEEP_SLOT past them
        near = np.concatenate([order, deep[:DEEP_SLOT]])
        slot = float(np.sort(scores[near])[::-1][DEEP_SLOT - 1]) * (1.0 - 1e-6)
        for k, v in zip(deep.tolist(), cand[deep].tolist()):
            if name := page(v, titled, own=False):
                scores[k] = max(scores[k], slot)
                out.second_hop[v] = (first, name, True)
    return out


def _titles_first(cand: np.ndarray, scores: np.ndarray, order: np.ndarray,
                  second_hop: dict[int, tuple[int, str, bool]], asked_title: dict[int, str]) -> None:
    """Keep, in place, the second hops raised through a name they share with the best below
    every passage raised through a title (a page the best passage names, or one the question
    names), each just below the lowest of those, in their own order."""
    at = {int(cand[k]): int(k) for k in order.tolist()}
    titles = [at[v] for v, (_after, _name, title) in second_hop.items() if title and v in at]
    titles += [at[v] for v in asked_title if v in at]
    shared = [at[v] for v, (_after, _name, title) in second_hop.items() if not title and v in at]
    if not titles or not shared:
        return
    floor = min(float(scores[k]) for k in titles)
    above = sorted((k for k in shared if scores[k] >= floor), key=lambda k: -scores[k])
    for i, k in enumerate(above):
        scores[k] = floor * (1.0 - 1e-6 * (i + 1))


def _best_first(values: np.ndarray, k: int) -> np.ndarray:
    """The positions of the ``k`` largest ``values``, largest first, ties to the lower position
    (``np.argsort(-values, kind="stable")[:k]`` without sorting every candidate)."""
    top = top_positions(values, k)
    return top[np.argsort(-values[top], kind="stable")]


def best_passage(hits: list[Hit]) -> Hit | None:
    """The passage the links were read from: the best-scored passage among the hits as the
    rank stage scored them (a raised one stays below it), None without a passage."""
    return max((h for h in hits if h.kind == "passage"), key=lambda h: h.score, default=None)


def below_best(hits: list[Hit], best: Hit | None, words_first: bool = False) -> list[Hit]:
    """``hits`` once recency has re-scored them (core/timeline.rank_by_time), each raised
    passage (evidence ``second_hop`` or ``asked_title``) kept below ``best`` as the rank stage
    left it: a raised passage of a newer document than the best's passed it, and the first hit
    changed because of a link. Re-sorted as rank_by_time sorts when one moved."""
    if best is None:
        return hits
    ceiling = best.score * (1.0 - 1e-6)
    moved = [h for h in hits if h is not best and h.score > ceiling
             and ("second_hop" in h.evidence or "asked_title" in h.evidence)]
    for h in moved:
        h.score = ceiling
    return sorted(hits, key=lambda h: exact_first(h, words_first)) if moved else hits


def _title_named(title: str | None, names: dict[str, str]) -> str | None:
    """The name among ``names`` (normalised key -> as written) that is ``title``: the whole
    title, or what comes before its parenthesis or its first comma."""
    if not title:
        return None
    return next((names[key] for key in _title_keys(title) if key in names), None)


def _title_written(title: str, question: str) -> str | None:
    """The title, whole or before its parenthesis or first comma (as the title spells it), when
    ``question`` writes it as a name: whole words, capitalised as in the title, three letters or
    more (refusal.names_one_thing); a one-word title not where a sentence opens ("When" of "When
    did ..." names no song "When"). Curly and straight apostrophes are one."""
    question = question.replace("\u2019", "'")
    for head in _title_heads(title):
        plain = head.replace("\u2019", "'")
        if sum(c.isalpha() for c in plain) < 3 or not names_one_thing(plain):
            continue
        if any(" " in plain or not opens_sentence(question[:at]) for at in _written(plain, question)):
            return head
    return None


def _written(name: str, question: str, fold: bool = False) -> list[int]:
    """Where ``question`` (apostrophes already straight) writes ``name``, whole words (no word
    character, as a regular expression's ``\\w``, on either side); ``fold``: case aside. A
    plain search, not a pattern compiled per title: ranking reads every candidate's title."""
    name = name.replace("\u2019", "'")
    if fold:
        low_name, low_question = name.lower(), question.lower()
        if len(low_name) == len(name) and len(low_question) == len(question):
            name, question = low_name, low_question
        else:  # a character whose lower case is longer ("\u0130"): positions would shift
            return [m.start() for m in re.finditer(r"(?<!\w)" + re.escape(name) + r"(?!\w)",
                                                   question, re.IGNORECASE)]
    out, at = [], question.find(name) if name else -1
    while at >= 0:
        end = at + len(name)
        whole = not (at and _word_char(question[at - 1])) and not (end < len(question)
                                                                    and _word_char(question[end]))
        if whole:
            out.append(at)
        at = question.find(name, end if whole else at + 1)
    return out


def _word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def _inside(key: str, longer: list[str]) -> bool:
    """Whether the name ``key`` (normalised) is part of one of the ``longer`` ones, whole words;
    names joined by "and" or "or" are a list, not one name ("harold and tostig godwinson")."""
    return any(part != key and f" {key} " in f" {part} "
               for k in longer for part in _CONJUNCTION.split(k))


_CONJUNCTION = re.compile(r" (?:and|or|&) ")


def _ends_a_name(name: str, question: str) -> bool:
    """Whether every place ``question`` writes ``name`` (case and apostrophes aside, whole words)
    comes right after a capitalised word that opens no sentence and ends in no punctuation, or
    after a hyphen: there it ends a longer name ("Virginia" of "West Virginia", "Cry Wolf" of
    "Never Cry Wolf", "Hungary" of "Austria-Hungary"), whatever the store holds."""
    question = question.replace("\u2019", "'")
    found = _written(name, question, fold=True)
    return bool(found) and all(_after_a_name(question, at) for at in found)


def _after_a_name(text: str, start: int) -> bool:
    """Whether ``text[start:]`` follows a hyphen, or spaces after a capitalised word that opens
    no sentence and ends in a letter or digit ("American," ends). Read backwards from ``start``
    over that word alone, so a long question costs no more than a short one."""
    if start and text[start - 1] == "-":
        return True
    end = start
    while end and text[end - 1] == " ":
        end -= 1
    if end == start or not end:
        return False
    begin = end
    while begin and not text[begin - 1].isspace() and end - begin < _WORD_MAX:
        begin -= 1
    word = text[begin:end]
    return word[0].isupper() and word[-1].isalnum() and not opens_sentence(text[:begin])


_WORD_MAX = 64  # a longer run without a space is no name


@lru_cache(maxsize=8192)
def _title_heads(title: str) -> tuple[str, ...]:
    """A title as a page is named: whole, before its parenthesis, before its first comma."""
    return tuple(dict.fromkeys(h.strip() for h in (title, TITLE_QUALIFIER.sub("", title), title.split(",")[0])
                               if h.strip()))


@lru_cache(maxsize=8192)
def _title_keys(title: str) -> tuple[str, ...]:
    """A title's keys as names: whole, before its parenthesis, before its first comma (kept
    across searches: a store's titles come back again and again)."""
    return tuple(dict.fromkeys(_key(head) for head in _title_heads(title)))


@lru_cache(maxsize=8192)
def _key(text: str) -> str:
    return normalise_phrase(text)
