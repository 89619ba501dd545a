"""The store's code tables and statements: repositories, files, symbols, links, history,
versions beside HEAD, and the reads of whole-repository analyses and usage records."""
