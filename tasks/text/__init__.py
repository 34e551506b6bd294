"""Text input: tokenizers, cleaning, line reading, token masking, batching and preprocessors."""
