"""Memories and conversations: structured memories with history and validity, conversation
turns, listings and records read back (get, expand, stats), export and vacuum."""
