"""Adapters: the `seahorse` CLI and the MCP stdio server, each a thin layer over the Engine."""
