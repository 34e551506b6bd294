"""Command-line binaries (absl flags): train, evaluate, predict, calibrate, export, pretrain, ...

Importing the package quiets TensorFlow's C++ start-up logging (before
TensorFlow is imported), for every binary.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
