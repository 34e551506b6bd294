"""Training callbacks: keep the best model, written atomically."""

import json
import os

import keras
import numpy as np

from tasks.atomic_files import save_model_atomically, write_json_atomically


class BestModelCheckpoint(keras.callbacks.Callback):
    """Saves the model to `path` (a `.keras` file) whenever `monitor` improves.

    The file is written beside the target and renamed over it, so an
    interrupted save never leaves a half-written model. The best value and
    epoch go to `path + ".json"`.

    Args:
        path: where the best model goes, ending in `.keras`.
        monitor: the logged metric, e.g. "val_accuracy".
        mode: "max" or "min".

    Examples:
    >>> callback = BestModelCheckpoint("/tmp/no-such-run/best.keras", "val_accuracy", "max")
    >>> callback.best, callback.best_epoch
    (-inf, None)
    """

    def __init__(self, path, monitor, mode="max"):
        super().__init__()
        if mode not in ("max", "min"):
            raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")
        self.path = path
        self.monitor = monitor
        self.mode = mode
        self.best = -np.inf if mode == "max" else np.inf
        self.best_epoch = None
        record = path + ".json"
        if os.path.exists(record):  # resuming: do not forget the earlier best
            with open(record) as f:
                saved = json.load(f)
            self.best, self.best_epoch = saved["value"], saved["epoch"]

    def _improved(self, value):
        return value > self.best if self.mode == "max" else value < self.best

    def on_epoch_end(self, epoch, logs=None):
        value = (logs or {}).get(self.monitor)
        if value is None:
            raise KeyError(
                f"BestModelCheckpoint: metric {self.monitor!r} not in logs "
                f"({', '.join(sorted(logs or {}))})"
            )
        if not self._improved(float(value)):
            return
        self.best, self.best_epoch = float(value), epoch + 1
        save_model_atomically(self.model, self.path)
        write_json_atomically({"monitor": self.monitor, "value": self.best,
                               "epoch": self.best_epoch}, self.path + ".json")
