"""Command-line binaries (absl flags): train, evaluate."""
