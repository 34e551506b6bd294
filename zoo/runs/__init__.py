"""Run directories: their layout, the resumable training loop, loading a trained run, model cards."""
