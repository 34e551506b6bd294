"""What the binaries share: flag definitions, run setup, how a binary ends on an error."""
