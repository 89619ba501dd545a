"""Issue 35 (visible behaviour): every Engine verb declares its lock and usage recording at its
definition (``@verb``); a public method without the declaration is refused when its class is
made; the verbs live in per-feature classes, none over 40 methods, and Engine still has them all."""

from __future__ import annotations

import inspect
import sqlite3
import threading
from pathlib import Path

import pytest

from seahorse import Engine, Settings
from seahorse.engine import _Verbs, verb

# Not verbs: read-only views of the engine's state (properties, no lock, as before).
STATE_VIEWS = {"settings", "store", "embedder", "phrase_embedder", "extractor"}
UNRECORDED = {"close", "budget", "retrieval_index", "watch", "gain"}


def _public(cls: type) -> dict[str, object]:
    return {n: inspect.getattr_static(cls, n) for n in dir(cls) if not n.startswith("_")}


def test_every_public_engine_method_is_a_declared_verb() -> None:
    public = _public(Engine)
    assert {n for n, a in public.items() if isinstance(a, property)} == STATE_VIEWS
    verbs = {n: a for n, a in public.items() if n not in STATE_VIEWS}
    assert len(verbs) == 51 and all(callable(a) for a in verbs.values())
    undeclared = sorted(n for n, a in verbs.items() if not hasattr(a, "__verb__"))
    assert undeclared == []
    assert {n for n, a in verbs.items() if not a.__verb__["usage"]} == UNRECORDED
    assert {n for n, a in verbs.items() if not a.__verb__["lock"]} == {"export"}  # holds it as it yields


def test_a_verb_without_the_declaration_is_refused() -> None:
    """A verb class of seahorse/engine.py with an undeclared public method fails at import."""
    with pytest.raises(TypeError, match=r"forgotten not declared with @verb"):
        class Careless(_Verbs):
            __module__ = "seahorse.engine"

            @verb
            def declared(self) -> None: ...

            def forgotten(self) -> None: ...

    with pytest.raises(TypeError, match=r"helper not declared"):
        class Static(_Verbs):
            __module__ = "seahorse.engine"

            @staticmethod
            def helper() -> None: ...

    class Fine(_Verbs):  # private helpers and declared verbs are fine
        __module__ = "seahorse.engine"

        @verb(usage=False)
        def fine(self) -> None: ...

        def _helper(self) -> None: ...

    class Mine(Engine):  # a caller's own subclass elsewhere is not checked
        def helper(self) -> None: ...


def test_no_verb_class_defines_more_than_40_methods() -> None:
    for cls in Engine.__mro__[:-1]:
        own = [n for n, a in vars(cls).items() if inspect.isfunction(a) or isinstance(a, property)
               or hasattr(a, "__verb__")]
        assert len(own) <= 40, (cls.__name__, len(own))


def test_a_declared_verb_holds_the_lock_and_is_recorded_under_its_name(tmp_path: Path) -> None:
    db = tmp_path / "kg.db"
    with Engine(Settings(db_path=db, embedder="hash")) as eng:
        eng.upsert_memory("k", "the kettle is in the left cupboard")
        done = threading.Event()
        with eng._lock:  # another thread's verb waits its turn
            t = threading.Thread(target=lambda: (eng.show_memory("k"), done.set()))
            t.start()
            assert not done.wait(0.3)
        assert done.wait(10)
        t.join()
        eng.budget()  # declared usage=False: locked, not recorded
        records = list(eng.export())  # lock=False: the generator holds it itself
        assert any(r.get("key") == "k" for r in records)
    con = sqlite3.connect(db)
    try:
        tools = [r[0] for r in con.execute("SELECT tool FROM usage ORDER BY id")]
    finally:
        con.close()
    assert tools == ["upsert_memory", "show_memory", "export"]
