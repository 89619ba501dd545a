"""Mechanisms: one job each, each heavy dependency in one of them (igraph in graph, tree-sitter
in code, git in repo, onnxruntime and tokenizers in onnxrt, wordllama in embed, psutil in budget).
They know nothing of the store or the services."""
