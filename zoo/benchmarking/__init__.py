"""Arithmetic and batching for tools/benchmark.py (FLOPs, MFU, KerasHub's padded batches)."""
