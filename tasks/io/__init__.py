"""Files and directories: which ones are ours to write, and who is writing them now."""
