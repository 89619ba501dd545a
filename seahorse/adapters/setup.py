"""`seahorse setup CLIENT [--print]`: an MCP client's configuration for this installation,
with absolute paths (the `seahorse-server` beside this Python, else on PATH, else this Python
with `-m seahorse.server`; the store resolved from --db / SEAHORSE_DB), merged into the
client's file or printed. Clients start servers without a shell, so nothing relies on PATH
or on `~`.

`seahorse setup CLIENT --http URL [--token-file F]` writes an entry for a server already running
with `seahorse run --http` instead: the URL and an ``Authorization: Bearer`` header, for the
clients whose files take remote servers with headers (HTTP_ENTRIES); the header names
$SEAHORSE_HTTP_TOKEN (the client expands it at start) unless --token-file puts the token itself
in the file."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from ..errors import InvalidInput

CLIENT_FILES = {
    "claude-code": lambda home: Path.cwd() / ".mcp.json",  # the project's scope
    "claude-desktop": lambda home: (home / "Library/Application Support/Claude" if sys.platform == "darwin"
                                    else home / ".config/Claude") / "claude_desktop_config.json",
    "cursor": lambda home: home / ".cursor/mcp.json",
    "openclaw": lambda home: home / ".openclaw/mcp.json",
}


# Clients whose configuration file takes a remote MCP server with headers, and how each spells
# it (the token from the environment, in the client's own syntax, unless --token-file).
HTTP_ENTRIES = {
    "claude-code": lambda url, auth: {"type": "http", "url": url, "headers": {"Authorization": auth}},
    "cursor": lambda url, auth: {"url": url, "headers": {"Authorization": auth}},
}
TOKEN_FROM_ENV = {"claude-code": "${SEAHORSE_HTTP_TOKEN}", "cursor": "${env:SEAHORSE_HTTP_TOKEN}"}
NO_HTTP = {
    "claude-desktop": "claude_desktop_config.json takes only servers it starts (stdio); add the URL "
                      "under Settings > Connectors instead, or drop --http for the stdio entry",
    "openclaw": "its configuration has no documented entry for a remote server with headers; drop "
                "--http for the stdio entry",
}


def http_entry(client: str, url: str, token_file: str | None) -> tuple[dict, list[str]]:
    """The client's entry for ``url`` (``/mcp`` added to a bare address) and the notices."""
    from urllib.parse import urlparse

    if client in NO_HTTP:
        raise InvalidInput(f"{client} cannot take an HTTP server here: {NO_HTTP[client]}", field="http")
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise InvalidInput(f"--http {url!r}: give the server's URL, e.g. http://127.0.0.1:8765/mcp",
                           field="http")
    if parsed.path in ("", "/"):
        url = url.rstrip("/") + "/mcp"
    notices = []
    if token_file:
        from .http import read_token

        token = read_token(token_file, "--token-file")
        notices.append(f"the token is written into {CLIENT_FILES[client](Path.home())}: keep that file "
                       f"private (out of version control)")
    else:
        token = TOKEN_FROM_ENV[client]
        notices.append("the client reads the token from SEAHORSE_HTTP_TOKEN: set it where the client "
                       "starts (or pass --token-file to write the token itself)")
    if parsed.scheme == "http" and parsed.hostname not in ("127.0.0.1", "localhost", "::1"):
        notices.append("plain http to another machine sends the token unencrypted: put TLS in front "
                       "(docs/http.md) and use https://")
    return HTTP_ENTRIES[client](url, f"Bearer {token}"), notices


def server_command() -> tuple[str, list[str]]:
    """The absolute command that starts the MCP server of this installation."""
    beside = Path(sys.executable).parent / "seahorse-server"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside.absolute()), []
    found = shutil.which("seahorse-server")
    if found:
        return str(Path(found).resolve()), []
    return str(Path(sys.executable).absolute()), ["-m", "seahorse.server"]


def store_arg(db: str | None) -> tuple[str, bool | None]:
    """The store as the server's --db (a file's absolute path, or the URL as given) and whether
    it exists (None for a server: it answers when the store opens)."""
    from ..config import DbUrl, load_settings

    where = load_settings(db_path=db).db_path
    if isinstance(where, DbUrl):
        return where.url, None
    path = Path(where).expanduser().resolve()
    return str(path), path.exists()


def missing_store(db_path: str) -> str:
    return (f"the store {db_path} does not exist yet: the server creates it on its first write "
            f"(add_document, upsert_memory, index_repo), or fill it now with "
            f"`seahorse index --db {db_path} ...`; another store: pass --db PATH")


def entry(db: str | None, allow: list[str] | tuple[str, ...] = ()) -> dict:
    db_path, _exists = store_arg(db)
    command, args = server_command()
    folders = []
    for p in allow:
        folder = Path(p).expanduser().resolve()
        if not folder.is_dir():
            raise InvalidInput(f"--allow {p}: not a folder", field="allow")
        folders.append(f"--allow={folder}")
    return {"command": command, "args": [*args, "--db", db_path, *folders]}


def setup_client(client: str, db: str | None, print_only: bool,
                 allow: list[str] | tuple[str, ...] = (), http: str | None = None,
                 token_file: str | None = None) -> dict:
    if client not in CLIENT_FILES:
        raise InvalidInput(f"unknown client {client!r}; one of {', '.join(CLIENT_FILES)}", field="client")
    if token_file and not http:
        raise InvalidInput("--token-file goes with --http URL", field="token_file")
    if http:  # the store is the running server's: nothing of it to resolve here
        server, notices = http_entry(client, http, token_file)
        db_path, exists = None, None
    else:
        server = entry(db, allow)
        db_path, exists = store_arg(db)
        notices = [missing_store(db_path)] if exists is False else []
    config = {"mcpServers": {"seahorse": server}}
    path = CLIENT_FILES[client](Path.home())
    if print_only:
        return {"client": client, "path": str(path), "config": config,
                "text": json.dumps(config, indent=2), "db": db_path, "db_exists": exists, "notices": notices}
    existing: dict = {}
    if path.exists():
        try:
            existing = json.loads(path.read_text(encoding="utf-8") or "{}")
        except (OSError, json.JSONDecodeError) as exc:
            raise InvalidInput(f"{path} is not JSON I can merge into ({exc}); fix it or use --print",
                               field="client") from None
        if not isinstance(existing, dict):
            raise InvalidInput(f"{path} does not hold a JSON object; fix it or use --print", field="client")
    servers = existing.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise InvalidInput(f"{path}: mcpServers is not an object; fix it or use --print", field="client")
    servers["seahorse"] = server
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    if token_file:  # the file holds a secret now: readable by its owner only
        tmp.touch(mode=0o600)
        os.chmod(tmp, 0o600)
    tmp.write_text(json.dumps(existing, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return {"client": client, "path": str(path), "config": config, "db": db_path, "db_exists": exists,
            "notices": notices}
