"""Code: checkouts indexed as files, symbols, links and history; code lookups and search;
versions beside HEAD; dependency walks and impact; analyses; git hooks and `watch`."""
