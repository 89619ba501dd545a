"""Model runtimes: onnxruntime sessions and tokenizers, the embedder tiers, e5's INT8 graph,
GLiNER, the cross-encoder, and int8 dot products."""
