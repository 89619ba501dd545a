"""Moving data in and out: other memory tools' files (server-memory, basic-memory, JSONL, CSV),
`seahorse export` records imported back, a store to another backend or another embedder."""
