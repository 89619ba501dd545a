"""`seahorse ui`, the local web viewer: a real `seahorse ui` process over a store built by the
real CLI, driven in a real browser (Debian's chromium through Playwright for Python).

The gate (token, host, read-only) is also checked without a browser, over plain HTTP, so it
runs wherever the tests do. The browser tests skip, saying why, when /usr/bin/chromium or
Playwright is missing (.ci/run installs chromium).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import CLI, PI_QUERY, PI_SENTENCES
from test_code_repo import commit, git

CHROMIUM = "/usr/bin/chromium"
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"]
SCRIPT = "<script>window.PWNED=1</script><img src=x onerror=\"window.PWNED=2\">"
SOURCE_ROOT = str(Path(__file__).resolve().parent.parent)
TURNS = [{"id": "t1", "speaker": "Ana", "text": "Shall we hike the Pinnacles trail on Saturday?"},
         {"id": "t2", "speaker": "Ben", "text": "Yes, but the Pinnacles trail is steep after the rain."},
         {"id": "t3", "speaker": "Ana", "text": "Then we take the river path and bring the dog."}]
LONG_CALLER = "count_the_words_of_the_text_after_parsing_it_into_a_list_and_return_how_many_there_were_in_all"
CODE = ("def parse(text):\n    return text.split()\n\n\n"
        "def count(text):\n    \"\"\"How many words.\"\"\"\n    return len(parse(text))\n\n\n"
        f"def {LONG_CALLER}(text):\n    return len(parse(text))\n")


def build_store(root: Path) -> tuple[CLI, dict]:
    """A store written by the CLI: the Pi passages, a memory replaced once (2 s apart), a
    memory holding markup, a conversation and a small git checkout."""
    root.mkdir(parents=True, exist_ok=True)
    cli = CLI(root, root / "kg.db")
    for i, text in enumerate(PI_SENTENCES):
        cli.json("index", "--text", text, "--source", f"doc:pi{i}")
    first = cli.json("memory", "add", "editor", "Alice edits with vim", "--tag", "tools")
    time.sleep(2.1)
    cli.json("memory", "add", "editor", "Alice switched to emacs", "--tag", "tools")
    cli.json("memory", "add", "markup", SCRIPT)
    cli.json("memory", "add", "phone", "Alice carries a Nokia 3310")
    cli.json("memory", "add", "new-phone", "Alice carries a Pixel 9", "--supersedes", "phone")
    conv = root / "hike.jsonl"
    conv.write_text("".join(json.dumps(t) + "\n" for t in TURNS))
    cli.json("add-conversation", str(conv), "--name", "hike")
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    commit(repo, "Add the word counter", {"words.py": CODE})
    cli.json("index", "--repo", str(repo))
    return cli, {"memory_node": first["id"], "repo": repo}


class Viewer:
    """One `seahorse ui --port 0 --json` process; its URL from the first line it prints."""

    def __init__(self, db: Path, *extra: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEAHORSE_")}
        env.update(SEAHORSE_EMBEDDER="hash", OPENBLAS_NUM_THREADS="1",
                   PYTHONPATH=SOURCE_ROOT + os.pathsep + env.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen([sys.executable, "-m", "seahorse", "ui", "--db", str(db), "--port", "0",
                                      "--json", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
        ready, _, _ = select.select([self.proc.stdout], [], [], 120)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.stop()
            raise AssertionError(f"the viewer did not start: {self.proc.stderr.read()}")
        self.info = json.loads(line)
        self.url = self.info["url"]
        self.base = self.url.split("/?")[0]
        self.token = self.url.split("token=")[1]

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
        err = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        assert "Traceback" not in err, err
        return err


def http(url: str, *, method: str = "GET", headers: dict | None = None, body: dict | None = None
         ) -> tuple[int, str]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return build_store(tmp_path_factory.mktemp("ui"))


@pytest.fixture(scope="module")
def viewer(store):
    v = Viewer(store[0].db)
    yield v
    v.stop()


@pytest.fixture(scope="module")
def writer(tmp_path_factory):
    """A `seahorse ui --write` over a small store of its own: (viewer, cli)."""
    root = tmp_path_factory.mktemp("ui-write")
    cli = CLI(root, root / "kg.db")
    for key, value in (("editor", "Alice edits with vim"), ("shell", "Alice uses zsh"),
                       ("pager", "Alice pages with less")):
        cli.json("memory", "add", key, value)
    v = Viewer(cli.db, "--write")
    yield v, cli
    err = v.stop()  # asserts no traceback
    assert "Exception in ASGI application" not in err, err


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no {CHROMIUM}: `apt-get install chromium` to run the browser tests")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed: pip install -e '.[test]'")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, viewer):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    pg.problems = []
    pg.on("pageerror", lambda e: pg.problems.append(str(e)))
    pg.on("dialog", lambda d: (pg.problems.append("dialog: " + d.message), d.dismiss()))
    pg.goto(viewer.url)  # trades the token for the cookie, then drops it from the address
    yield pg
    assert pg.problems == []
    ctx.close()


# ----- the gate, over plain HTTP ------------------------------------------------------------------
def test_a_request_without_the_token_is_refused(viewer):
    assert viewer.info["write"] is False
    assert viewer.base.startswith("http://127.0.0.1:")
    for path in ("/", "/api/search?q=zram", "/api/memories", "/static/app.js", "/?token=wrong"):
        status, text = http(viewer.base + path)
        assert status == 403, path
        assert "token" in text
    status, text = http(f"{viewer.base}/api/memories?token={viewer.token}")
    assert status == 200 and "editor" in text
    # Another host name (DNS rebinding) is refused even with the token.
    status, _ = http(viewer.url, headers={"Host": "evil.example:80"})
    assert status == 403


def test_a_write_is_refused_without_write(viewer, store):
    cli = store[0]
    headers = {"Content-Type": "application/json", "X-Seahorse-Token": viewer.token}
    status, text = http(f"{viewer.base}/api/forget?token={viewer.token}", method="POST",
                        headers=headers, body={"key": "editor"})
    assert status == 403 and "read-only" in text and "--write" in text
    # Without the header, a cookie or query token is not enough for a change (another site's form).
    status, text = http(f"{viewer.base}/api/forget?token={viewer.token}", method="POST",
                        headers={"Content-Type": "application/json"}, body={"key": "editor"})
    assert status == 403
    assert cli.json("memory", "show", "editor")["value"] == "Alice switched to emacs"


def raw(base: str, path: str, *, method: str = "GET", headers: dict | None = None, body: bytes | None = None
        ) -> tuple[int, dict, str]:
    """One request, no redirect followed: status, headers (lower-case names), body."""
    import http.client

    host, port = base.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode()
    finally:
        conn.close()


def test_the_cookie_is_not_the_token_and_replayed_reads_and_writes_nothing(viewer, writer):
    """Issue 37 (15): cookies are scoped to the host, not the port, so any other server on
    127.0.0.1 receives the viewer's cookie. It held the token: replayed, it read the store and,
    with the page's copy of the token, got a --write change through."""
    v, cli = writer
    for w in (viewer, v):
        status, headers, page = raw(w.base, f"/?token={w.token}")
        cookie = headers["set-cookie"].split(";")[0]
        assert w.token not in cookie, "the cookie holds the URL token"
        assert status == 200 and w.token in page  # the page opened with the token holds it
        # What another local server received, replayed: the page opens, without the token ...
        status, _, page = raw(w.base, "/", headers={"Cookie": cookie})
        assert status == 200 and w.token not in page and "seahorse-token" in page
        # ... and no data: every API call needs the token itself.
        for path in ("/api/memories", "/api/search?q=editor", "/api/info"):
            status, _, text = raw(w.base, path, headers={"Cookie": cookie})
            assert status == 403 and "token" in text, path
        status, _, text = raw(w.base, "/api/memories", headers={"X-Seahorse-Token": w.token})
        assert status == 200 and "editor" in text
    post = {"Cookie": cookie, "Content-Type": "application/json"}
    status, _, _ = raw(v.base, "/api/forget", method="POST", headers=post, body=b'{"key": "editor"}')
    assert status == 403
    assert cli.json("memory", "show", "editor")["value"] == "Alice edits with vim"
    status, _, _ = raw(v.base, "/api/forget", method="POST", body=b'{"key": "editor"}',
                       headers={**post, "X-Seahorse-Token": v.token})
    assert status == 200


def wire(base: str, request: bytes, *, end: bool = False) -> int | None:
    """Bytes sent as they are over a socket (``end``: then the sending side shut); the reply's
    status, or None when the server answered nothing."""
    import socket

    host, port = base.split("//")[1].split(":")
    with socket.create_connection((host, int(port)), timeout=60) as s:
        s.sendall(request)
        if end:
            s.shutdown(socket.SHUT_WR)
        out = b""
        while b"\r\n" not in out:
            got = s.recv(65536)
            if not got:
                break
            out += got
    return int(out.split(b" ")[1]) if out.startswith(b"HTTP/1.1 ") else None


def test_a_chunked_body_is_bounded_and_a_short_one_is_no_error(writer):
    """Issue 37 (10): the body's size was checked against Content-Length only, so a chunked
    POST (no length) was read whole, however long; a body shorter than its Content-Length
    raised (ClientDisconnect) into a bare 500 and a traceback."""
    v, cli = writer
    head = (f"POST /api/forget HTTP/1.1\r\nHost: {v.base.split('//')[1]}\r\nX-Seahorse-Token: {v.token}\r\n"
            "Content-Type: application/json\r\n").encode()
    big = json.dumps({"key": "shell", "pad": "x" * (600 * 1024)}).encode()
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(big[i:i + 65536]), big[i:i + 65536])
                      for i in range(0, len(big), 65536))
    status = wire(v.base, head + b"Transfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n")
    assert status == 413
    assert cli.json("memory", "show", "shell")["value"] == "Alice uses zsh"
    small = b'{"key": "pager"}'
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(small), small)
    assert wire(v.base, head + b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunked) == 200
    assert cli.run("memory", "show", "pager").returncode != 0  # a small chunked body works
    # A Content-Length longer than the body sent: no answer is possible, and no error either
    # (the fixture's teardown checks the viewer's stderr for a traceback).
    assert wire(v.base, head + b"Content-Length: 70\r\n\r\n" + b'{"key": "shell"}', end=True) in (None, 400)
    status, _, text = raw(v.base, "/api/info", headers={"X-Seahorse-Token": v.token})
    assert status == 200 and cli.json("memory", "show", "shell")["value"] == "Alice uses zsh"


def test_a_non_ascii_digit_document_ref_is_a_clear_error(viewer):
    """Issue 37 (10): "²".isdigit() holds but int("²") fails: a bare 500."""
    for ref in ("²", "١٢", "12³"):
        status, _, text = raw(viewer.base, "/api/document?id=" + urllib.parse.quote(ref),
                              headers={"X-Seahorse-Token": viewer.token})
        assert status == 404 and json.loads(text)["error"], (ref, status, text)


def test_replies_are_bounded_and_bad_input_is_one_line(viewer):
    q = f"token={viewer.token}"
    status, text = http(f"{viewer.base}/api/search?q=zram&top_k=5000&{q}")
    assert status == 400 and "top_k" in json.loads(text)["error"]
    status, text = http(f"{viewer.base}/api/neighbours?id=abc&{q}")
    assert status == 400 and "whole number" in json.loads(text)["error"]
    status, text = http(f"{viewer.base}/api/node?id=999999&{q}")
    assert status == 404 and json.loads(text)["error"] == "no node 999999"


def test_a_missing_store_is_a_clear_error(tmp_path):
    cli = CLI(tmp_path, tmp_path / "none.db")
    proc = cli.run("ui", "--port", "0", timeout=60)
    assert proc.returncode != 0
    assert "does not exist" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "none.db").exists()


def test_a_busy_port_is_a_clear_error(store):
    import socket

    cli = store[0]
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        proc = cli.run("ui", "--port", str(busy.getsockname()[1]), timeout=60)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "cannot listen on 127.0.0.1" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_search_in_one_repository_is_the_engines_code_search(viewer, store):
    """Issue 37 (10): the viewer's search had no "in this repository" mode, so a code question
    returned changelog passages. With `repo`, it is the Engine's code search (`search --repo`)."""
    cli, repo = store[0], store[1]["repo"]
    cli.json("index", "--text", "Changelog: the word counter now counts how many words a text holds.",
             "--source", "doc:changelog")
    question, token = "How many words does the counter count?", {"X-Seahorse-Token": viewer.token}
    q = urllib.parse.quote(question)
    status, _, text = raw(viewer.base, f"/api/search?q={q}&refuse=0", headers=token)
    assert status == 200 and "doc:changelog" in [h.get("source") for h in json.loads(text)["hits"]]
    status, _, text = raw(viewer.base, "/api/info", headers=token)
    assert json.loads(text)["repos"] == [{"name": repo.name, "root": str(repo.resolve())}]
    status, _, text = raw(viewer.base, f"/api/search?q={q}&refuse=0&repo={urllib.parse.quote(str(repo))}",
                          headers=token)
    hits = json.loads(text)["hits"]
    assert status == 200 and hits and all(h.get("path") for h in hits), hits
    expected = cli.json("search", question, "--repo", str(repo), "--no-refuse", "--top-k", "10")
    assert [h["id"] for h in hits] == [h["id"] for h in expected["hits"]]
    status, _, text = raw(viewer.base, f"/api/search?q={q}&repo={repo.name}&as_of=2020-01-01", headers=token)
    assert status == 400 and "as_of" in json.loads(text)["error"]


def test_the_read_only_viewer_writes_nothing_not_even_usage(viewer, store):
    """Issue 37 (9): the viewer without --write recorded its reads as usage rows: a read verb
    wrote to the store. It opens the store read-only now: its files stay byte-identical."""
    import hashlib

    cli = store[0]
    files = [cli.db, cli.db.with_name(cli.db.name + "-wal")]

    def state() -> list[str]:
        return [hashlib.sha256(f.read_bytes()).hexdigest() if f.exists() else "" for f in files]

    before, token = state(), {"X-Seahorse-Token": viewer.token}
    assert raw(viewer.base, "/api/search?q=zram", headers=token)[0] == 200
    time.sleep(5.2)  # past the usage buffer's flush interval: the next call would flush it
    assert raw(viewer.base, "/api/search?q=editor", headers=token)[0] == 200
    assert raw(viewer.base, "/api/memories", headers=token)[0] == 200
    assert state() == before
    assert "ui" not in cli.json("gain")["surfaces"]


# ----- in the browser ----------------------------------------------------------------------------------
def search(page, question: str) -> None:
    page.fill("#q", question)
    page.click("#search-go")
    page.wait_for_selector("#search-timing[data-done]")


def test_search_shows_hits_and_the_evidence_graph(page, store):
    cli = store[0]
    assert page.url.endswith("/") or "#" in page.url  # the token left the address bar
    assert "token" not in page.url
    search(page, PI_QUERY)
    cards = page.locator(".hit")
    expected = cli.json("search", PI_QUERY, "--top-k", "10")
    assert cards.count() == len(expected["hits"]) > 0
    # The same Engine as the CLI: the same hits in the same order.
    assert [int(x) for x in cards.evaluate_all("cs => cs.map(c => c.dataset.id)")] == \
        [h["id"] for h in expected["hits"]]
    assert PI_SENTENCES[2][:30] in page.inner_text("#hits")
    first = expected["hits"][0]
    cards.first.click()
    page.wait_for_selector("#evidence-graph[data-nodes]")
    drawn = page.evaluate("""() => { const cy = window.seahorse.graphs.evidence;
        return { nodes: cy.nodes().map(n => ({ node: n.data('node'), seed: !!n.data('seed'),
                                               hit: !!n.data('hit') })),
                 edges: cy.edges().map(e => ({ src: e.source().data('node'), dst: e.target().data('node'),
                                               kind: e.data('kind') })),
                 rendered: cy.nodes().every(n => n.renderedPosition().x > 0) }; }""")
    paths = first["evidence"]["paths"]
    assert paths, "the first hit came along edges"
    # Every hop of every path is drawn: its node, and an edge of its kind to the next one.
    want_edges = set()
    for p in paths:
        chain = [hop["from"]["id"] for hop in p["hops"]] + [first["id"]]
        want_edges |= {(a, b, hop["edge"]) for a, b, hop in zip(chain, chain[1:], p["hops"])}
    assert {(e["src"], e["dst"], e["kind"]) for e in drawn["edges"]} == want_edges
    seeds = {p["hops"][0]["from"]["id"] for p in paths if p["from_seed"]}
    assert seeds and seeds <= {n["node"] for n in drawn["nodes"] if n["seed"]}
    assert [n["node"] for n in drawn["nodes"] if n["hit"]] == [first["id"]]
    assert drawn["rendered"]
    assert page.locator("#evidence-paths li").count() == len(paths)


def test_search_as_of_a_date_asks_the_engine_what_was_true_then(page, store):
    cli = store[0]
    old = cli.json("memory", "show", "editor")["history"][0]
    when = datetime.fromtimestamp((old["valid_from"] + old["replaced_at"]) / 2, timezone.utc).isoformat()
    expected = cli.json("search", "Which editor does Alice use?", "--as-of", when, "--no-refuse",
                        "--top-k", "10")
    page.fill("#as_of", when)
    page.check("#norefuse")
    search(page, "Which editor does Alice use?")
    ids = [int(x) for x in page.locator(".hit").evaluate_all("cs => cs.map(c => c.dataset.id)")]
    assert ids == [h["id"] for h in expected["hits"]]
    texts = page.inner_text("#hits")
    assert "Alice edits with vim" in texts and "emacs" not in texts


def test_explore_follows_a_neighbour_and_expands_a_ring(page, store):
    cli = store[0]
    search(page, PI_QUERY)
    hit = int(page.locator(".hit").first.get_attribute("data-id"))
    page.locator(".hit").first.click()
    page.click("text=Explore its neighbours")
    page.wait_for_selector("#explore-graph[data-nodes]")
    expected = cli.json("neighbours", str(hit), "--limit", "40")
    assert int(page.get_attribute("#explore-graph", "data-nodes")) == 1 + len(expected["neighbours"])
    assert page.locator("#neighbours li").count() == len(expected["neighbours"])
    # Follow the first neighbour: the page re-centres on it, and the hit is among its neighbours.
    nxt = expected["neighbours"][0]
    page.locator("#neighbours a.follow").first.click()
    page.wait_for_function(f"() => location.hash.includes('id={nxt['id']}') && "
                           f"document.querySelector('#explore-graph[data-nodes]') && "
                           f"document.querySelector('#neighbours li[data-id=\"{hit}\"]')")
    centre = page.evaluate("() => window.seahorse.graphs.explore.nodes('[?centre]').map(n => n.data('node'))")
    assert centre == [nxt["id"]]
    before = int(page.get_attribute("#explore-graph", "data-nodes"))
    # A ring more around a neighbour that has other neighbours: the graph grows, bounded.
    ring = next(x for x in cli.json("neighbours", str(nxt["id"]))["neighbours"] if x["degree"] > 1)
    page.locator(f'#neighbours li[data-id="{ring["id"]}"] button.expand').click()
    page.wait_for_function(f"() => +document.querySelector('#explore-graph').dataset.nodes > {before}")


def test_memory_timeline_as_of_before_the_replacement(page, store):
    cli = store[0]
    page.goto(page.url.split("#")[0] + "#/memories")
    page.wait_for_selector("#memories tbody tr")
    page.click("#memories >> text=global/editor")
    page.wait_for_selector("#timeline .version")
    assert page.locator("#timeline .version").count() == 2
    shown = cli.json("memory", "show", "editor")
    old = shown["history"][0]
    between = (old["valid_from"] + old["replaced_at"]) / 2

    def as_of(t: float) -> str:
        page.fill("#asof", datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S"))
        return page.inner_text("#asof-answer")

    assert "Alice edits with vim" in as_of(between)
    assert "vim" in page.inner_text("#timeline .version.asof")
    assert "Alice switched to emacs" in as_of(old["replaced_at"] + 5)
    assert "emacs" in page.inner_text("#timeline .version.asof")
    assert "nothing was stored" in as_of(old["valid_from"] - 3600)
    assert page.locator("#timeline .version.asof").count() == 0
    assert page.locator("#save-value").count() == 0  # read-only: no write controls
    # A memory another key retired: listed with the superseded ones, its successor named.
    page.goto(page.url.split("#")[0] + "#/memories?all=1")
    page.wait_for_selector("#memories >> text=global/phone")
    assert page.locator("#memories tr", has_text="global/phone").locator("td").last.inner_text() != "—"
    page.click("#memories >> text=global/phone")
    page.wait_for_selector("#timeline .version")
    successor = cli.json("documents", "show", "memory:global:new-phone")["id"]
    assert f"document {successor}" in page.inner_text("main")
    assert "superseded" in page.inner_text("#timeline")


def test_stored_markup_is_shown_as_text_and_not_run(page, store):
    cli = store[0]
    page.goto(page.url.split("#")[0] + "#/memories")
    page.wait_for_selector("#memories tbody tr")
    cell = page.locator("#memories td.value", has_text="PWNED")
    assert cell.inner_text() == SCRIPT
    page.click("#memories >> text=global/markup")
    page.wait_for_selector("#timeline .version")
    assert page.inner_text("#timeline .version .value") == SCRIPT
    page.goto(page.url.split("#")[0] + "#/search?q=PWNED+script+window&refuse=0")
    page.wait_for_selector("#search-timing[data-done]")
    assert page.evaluate("() => window.PWNED") is None
    assert page.locator("main img, main script").count() == 0
    node = cli.json("memory", "show", "markup")["id"]
    page.goto(page.url.split("#")[0] + f"#/node?id={node}")
    page.wait_for_selector("#node-text")
    assert page.inner_text("#node-text") == SCRIPT
    assert page.evaluate("() => window.PWNED") is None
    assert page.locator("main img, main script").count() == 0


def test_documents_and_a_conversation_turn_among_its_neighbours(page, store):
    page.goto(page.url.split("#")[0] + "#/documents?prefix=conversation:hike")
    page.wait_for_selector("#documents tbody tr")
    assert page.locator("#documents tbody tr").count() == 3
    page.click("text=conversation:hike#t2")
    page.wait_for_selector(".turn")
    assert "steep after the rain" in page.inner_text("#document-text")
    assert page.locator(".turn").count() == 3
    assert "steep after the rain" in page.inner_text(".turn.this")


def test_code_symbol_with_callers_and_history(page, store):
    page.goto(page.url.split("#")[0] + "#/code?name=parse")
    page.wait_for_selector("#sym-callers")
    assert "count" in page.inner_text("#sym-callers")
    assert "Add the word counter" in page.inner_text("#sym-history")


def test_code_page_keeps_a_long_caller_name_in_its_column_and_search_picks_a_repository(page, store):
    """Issue 37 (10): a long caller name overprinted the next column of the Code page; and the
    search page's "In" picks a repository (the Engine's code search)."""
    page.goto(page.url.split("#")[0] + "#/code?name=words.py:parse")
    page.wait_for_selector("#sym-callers")
    assert LONG_CALLER in page.inner_text("#sym-callers")
    boxes = page.evaluate("""() => {
        const col = (id) => document.getElementById(id).parentElement.getBoundingClientRect();
        const items = [...document.querySelectorAll('#sym-callers li, #sym-callers li > *')]
            .map((e) => e.getBoundingClientRect().right);
        return { callers: col('sym-callers'), callees: col('sym-callees'), right: Math.max(...items) }; }""")
    assert boxes["callers"]["right"] <= boxes["callees"]["left"]  # side by side
    assert boxes["right"] <= boxes["callers"]["right"] + 0.5, boxes  # nothing past its column
    page.goto(page.url.split("#")[0] + "#/search")
    name = store[1]["repo"].name
    page.wait_for_selector(f'#repo option:text-is("repository {name}")', state="attached")
    page.select_option("#repo", label=f"repository {name}")
    page.check("#norefuse")
    search(page, "How many words does the counter count?")
    assert page.locator(".hit").count() > 0
    kinds = page.locator(".hit").evaluate_all("cs => cs.map(c => c.dataset.kind)")
    assert set(kinds) <= {"symbol", "passage"}
    assert "doc:" not in page.inner_text("#hits")
    assert "repo=" in page.url


def test_store_page_counts_match_stats(page, store):
    stats = store[0].json("stats")
    page.goto(page.url.split("#")[0] + "#/store")
    page.wait_for_selector("#counts")
    text = page.inner_text("#counts")
    for kind, n in stats["nodes"].items():
        assert f"{kind} {n}" in text
    page.click("text=Add the graph analyses")
    page.wait_for_selector("#graph-analyses")


def test_the_viewer_sees_writes_of_another_process(page, store, viewer):
    cli = store[0]
    search(page, "Which lighthouse keeper painted the gannets?")
    assert "Morag" not in page.inner_text("#results")
    cli.json("index", "--text", "The lighthouse keeper Morag painted gannets on the cliffs of Noss.",
             "--source", "doc:gannets")
    search(page, "Which lighthouse keeper painted the gannets?")
    assert "Morag" in page.inner_text("#hits")


def test_with_write_a_memory_gets_a_new_version_and_a_document_is_deleted(browser, tmp_path):
    cli = CLI(tmp_path, tmp_path / "kg.db")
    cli.json("memory", "add", "editor", "Alice edits with vim")
    doc = cli.json("index", "--text", PI_SENTENCES[0], "--source", "doc:gone")
    v = Viewer(cli.db, "--write")
    try:
        assert v.info["write"] is True
        ctx = browser.new_context()
        pg = ctx.new_page()
        pg.set_default_timeout(60_000)
        pg.goto(v.url)
        pg.goto(v.base + "/#/memory?scope=global&key=editor")
        pg.wait_for_selector("#save-value")
        pg.fill("#new-value", "Alice moved to helix")
        pg.click("#save-value")
        pg.wait_for_function("() => document.querySelectorAll('#timeline .version').length == 2")
        shown = cli.json("memory", "show", "editor")
        assert shown["value"] == "Alice moved to helix"
        assert [h["value"] for h in shown["history"]] == ["Alice edits with vim"]
        pg.goto(v.base + f"/#/document?id={doc['doc_id']}")
        pg.click("#delete-document")
        assert cli.json("documents", "list")["items"], "one click only arms the button"
        pg.click("#delete-document")
        pg.wait_for_selector("#documents")
        assert cli.json("documents", "list")["items"] == []
        ctx.close()
    finally:
        v.stop()


# ----- the Engine read behind Explore --------------------------------------------------------------
def test_neighbours_reads_the_graph_with_hubs_bounds_and_catch_up(engine):
    from seahorse.errors import InvalidInput, NotFound

    # A hub: a phrase of degree >= max(8, 4 x the mean degree); here every passage names it.
    animals = ["otters", "herons", "badgers", "foxes", "voles", "stoats", "hares", "owls", "newts", "moles",
               "kestrels", "wrens"]
    places = ["Aberdeen", "Bristol", "Cardiff", "Dundee", "Exeter", "Falkirk", "Glasgow", "Hull", "Inverness",
              "Jarrow", "Kendal", "Leeds"]
    ids = [engine.add_document(f"The Raspberry Pi 5 filmed {a} in {p}.", source=f"doc:{a}").doc_id
           for a, p in zip(animals, places)]
    passage = engine.get_document(ids[0])["nodes"][0]
    out = engine.neighbours(passage)
    assert out["node"]["id"] == passage and out["node"]["kind"] == "passage"
    labels = {x["label"]: x for x in out["neighbours"]}
    assert any("otters" in k for k in labels) and all(x["edge"] == "context" for x in out["neighbours"])
    pi = next(x for x in out["neighbours"] if x["label"].lower() == "raspberry pi 5")
    assert pi["hub"] and pi["degree"] == len(animals)
    # Every edge drawn joins two nodes shown; the passage's edges are among them.
    shown = {passage} | {x["id"] for x in out["neighbours"]}
    assert all(e["src"] in shown and e["dst"] in shown for e in out["edges"])
    assert {(min(passage, x["id"]), max(passage, x["id"])) for x in out["neighbours"]} <= \
        {(e["src"], e["dst"]) for e in out["edges"]}
    # The hub's neighbourhood, bounded; and it sees a passage written after the first read.
    few = engine.neighbours(pi["id"], limit=5)
    assert len(few["neighbours"]) == 5 and few["truncated"] and few["total"] == len(animals)
    engine.add_document("The Raspberry Pi 5 filmed a pine marten in Mold.", source="doc:marten")
    assert engine.neighbours(pi["id"], limit=100)["total"] == len(animals) + 1
    with pytest.raises(NotFound):
        engine.neighbours(10**9)
    with pytest.raises(InvalidInput):
        engine.neighbours(passage, limit=0)


# ----- what uvicorn's h11 never passes, but another ASGI server may -------------------------------
def test_a_malformed_content_length_is_a_400_not_a_500(engine):
    """Issue 37 (10): `int(Content-Length)` raised on a value that is not a whole number (h11
    refuses those itself; other HTTP parsers pass them on) and the page got a bare 500. The
    real app, called as an ASGI server calls it."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from seahorse.adapters.ui import Viewer as App

    engine.upsert_memory("editor", "Alice edits with vim")
    app = App(engine, 8999, write=True)

    async def post(length: bytes) -> tuple[int, bytes]:
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                 "scheme": "http", "path": "/api/forget", "raw_path": b"/api/forget", "query_string": b"",
                 "root_path": "", "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8999),
                 "headers": [(b"host", b"127.0.0.1:8999"), (b"x-seahorse-token", app.token.encode()),
                             (b"content-type", b"application/json"), (b"content-length", length)]}
        body = [{"type": "http.request", "body": b'{"key": "editor"}', "more_body": False}]
        sent: list[dict] = []

        async def receive() -> dict:
            return body.pop(0) if body else {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)
        try:
            await app(scope, receive, send)
        except Exception as exc:  # what the server would turn into a bare 500
            return 500, repr(exc).encode()
        return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])

    def run(length: bytes) -> tuple[int, bytes]:  # a loop of its own: Playwright's may be running here
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(lambda: asyncio.run(post(length))).result()

    try:
        for bad in (b"abc", b"-1", b"1e3", b"\xd9\xa1\xd9\xa2", b"17, 17"):
            status, text = run(bad)
            assert status == 400 and b"Content-Length" in text, (bad, status, text)
        assert engine.show_memory("editor")["value"] == "Alice edits with vim"
        assert run(b"17")[0] == 200  # the same call, well formed, goes through
    finally:
        app.worker.shutdown(wait=True)
