"""Prose retrieval, the query path: seed the graph, walk it, rank what it reached, explain
why, refuse when the store does not hold the answer; the search state a process keeps."""
