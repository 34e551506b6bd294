"""Prompt-based (cloze) classification: a pattern with a [MASK] slot, a verbalizer from
labels to words, and the masked-LM head's scores of those words as the class scores."""
