"""Text input: tokenizers, cleaning, line and corpus reading, token masking, batching and
preprocessors."""
