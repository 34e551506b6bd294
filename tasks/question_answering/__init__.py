"""Extractive question answering: readers, windows, the start/end model, decoding and
SQuAD's exact match and F1."""
