"""`seahorse setup CLIENT [--print]`: an MCP client's configuration for this installation,
with absolute paths (the `seahorse-server` beside this Python, else on PATH, else this Python
with `-m seahorse.server`; the store resolved from --db / SEAHORSE_DB), merged into the
client's file or printed. Clients start servers without a shell, so nothing relies on PATH
or on `~`."""

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
                 allow: list[str] | tuple[str, ...] = ()) -> dict:
    if client not in CLIENT_FILES:
        raise InvalidInput(f"unknown client {client!r}; one of {', '.join(CLIENT_FILES)}", field="client")
    server = entry(db, allow)
    config = {"mcpServers": {"seahorse": server}}
    path = CLIENT_FILES[client](Path.home())
    db_path, exists = store_arg(db)
    notices = [missing_store(db_path)] if exists is False else []
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
    tmp.write_text(json.dumps(existing, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return {"client": client, "path": str(path), "config": config, "db": db_path, "db_exists": exists,
            "notices": notices}
