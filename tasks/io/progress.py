"""Progress of a long loop on standard error: done/total, rate and time left.

One reporter for every loop over data outside training (prediction,
evaluation, calibration, vocabulary learning):

- on a terminal (`stream.isatty()`), one line rewritten in place at most a
  few times a second: `predicting: 12/40 batches (30%), 5.1 batches/s, 6 s left`;
- otherwise (a log file, a pipe), a plain line each time another 10% is done
  or 30 s have passed, whichever comes first, so a log holds a few lines per
  loop, never one per batch;
- always a final line: `predicting: 40/40 batches (100%) in 8 s, 5.0 batches/s`.

While running, the rate counts from the first item on (a first batch that
traces the model does not inflate the time left); the final line gives the
mean over the whole loop.

It writes to standard error, so that what a binary prints on standard output
(JSON lines of predictions, a metrics line) stays machine-readable.

Reporters are silent unless enabled: library code (a task's `evaluate`, which
also runs after every training epoch) reports only when the program asked for
it, with `set_enabled(True)` (the binaries' `--progress` flag does this). A
reporter given `enabled=True` reports whatever the switch says.

Why not `keras.utils.Progbar`: it writes to standard output, decides between
a live bar and plain output by looking at standard output, and without a
terminal prints nothing until the end.

Examples:
>>> import io
>>> log = io.StringIO()  # not a terminal: plain lines
>>> ticks = iter([0.0, 1.0, 2.0, 3.0, 4.0, 4.0])  # a fake clock, in seconds
>>> with Progress("predicting", total=4, stream=log, enabled=True,
...               clock=lambda: next(ticks)) as progress:
...     for _ in range(4):
...         progress.advance()
>>> print(log.getvalue(), end="")
predicting: 1/4 batches (25%), 1.00 batches/s, ? left
predicting: 2/4 batches (50%), 1.00 batches/s, 2 s left
predicting: 3/4 batches (75%), 1.00 batches/s, 1 s left
predicting: 4/4 batches (100%) in 4 s, 1.00 batches/s
"""

import math
import sys
import time

import keras

_switch = {"enabled": False}


def set_enabled(enabled):
    """Turns every reporter of this process on or off (off until a program turns it on)."""
    _switch["enabled"] = bool(enabled)


def is_enabled():
    """Whether reporters created without `enabled=` report."""
    return _switch["enabled"]


def format_duration(seconds):
    """`seconds` for people: "42 s", "3 min 05 s", "2 h 07 min".

    >>> format_duration(42.4), format_duration(185), format_duration(7620)
    ('42 s', '3 min 05 s', '2 h 07 min')
    """
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def format_rate(rate):
    """Three significant figures at most, thousands separated: "0.421", "5.10", "1,234".

    >>> format_rate(0.4214), format_rate(5.1), format_rate(42.25), format_rate(1234.4)
    ('0.421', '5.10', '42.2', '1,234')
    """
    if rate >= 100:
        return f"{rate:,.0f}"
    if rate >= 10:
        return f"{rate:.1f}"
    if rate >= 1:
        return f"{rate:.2f}"
    return f"{rate:.3f}"


class Progress:
    """Reports how far a loop has got, its rate and the time left (see the module).

    Call `update(done)` (a running count) or `advance()` (one more) after
    each item, and `finish()` at the end, or use it as a context manager
    (`finish` on normal exit; on an error, a live line is ended so that the
    error message starts on its own line).

    Args:
        what: what is being done, the start of every line ("predicting").
        total: how many items there are; None when unknown (then no
            percentage and no time left).
        unit: what an item is ("batches", "texts").
        stream: where lines go; `sys.stderr` (as it is when a line is
            written) by default.
        interactive: rewrite one line in place; by default when `stream` is
            a terminal.
        enabled: report at all; by default the process-wide switch
            (`set_enabled`).
        every_fraction: without a terminal, a line each time this fraction of
            `total` more is done...
        every_seconds: ... or this many seconds have passed since the last line.
        refresh_seconds: on a terminal, the shortest time between rewrites.
        clock: seconds as a float (`time.monotonic`); tests pass a fake one.
    """

    def __init__(self, what, total=None, unit="batches", stream=None, interactive=None,
                 enabled=None, every_fraction=0.1, every_seconds=30.0, refresh_seconds=0.2,
                 clock=time.monotonic):
        self.what = what
        self.total = int(total) if total is not None and total >= 0 else None
        self.unit = unit
        self.enabled = is_enabled() if enabled is None else bool(enabled)
        self._stream = stream
        self._interactive = interactive
        self.every_fraction = every_fraction
        self.every_seconds = every_seconds
        self.refresh_seconds = refresh_seconds
        self._clock = clock
        self.done = 0
        self.detail = None
        self._start = clock() if self.enabled else None
        self._first = None  # (time, done) of the first update
        self._last_write = self._start
        self._last_milestone = 0
        self._live_line = False  # a terminal line not yet ended by a newline
        self._finished = False

    @property
    def stream(self):
        return self._stream if self._stream is not None else sys.stderr

    @property
    def interactive(self):
        if self._interactive is not None:
            return self._interactive
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    # === Counting ===

    def update(self, done, detail=None):
        """`done` items so far; `detail` (optional text) is appended to the line."""
        self.done = int(done)
        if detail is not None:
            self.detail = detail
        if not self.enabled or self._finished:
            return
        now = self._clock()
        if self._first is None:
            self._first = (now, self.done)
        if self.interactive:
            if now - self._last_write >= self.refresh_seconds:
                self._write_live(self.line(now), now)
        elif self._due(now):
            self._write_plain(self.line(now), now)

    def advance(self, count=1, detail=None):
        """`count` more items done."""
        self.update(self.done + count, detail)

    def finish(self, detail=None):
        """Writes the final line (once): the count, the time taken and the rate."""
        if detail is not None:
            self.detail = detail
        if not self.enabled or self._finished:
            return
        self._finished = True
        now = self._clock()
        text = self.final_line(now)
        if self.interactive:
            self._write_live(text, now)
            self.stream.write("\n")
            self._live_line = False
            self.stream.flush()
        else:
            self._write_plain(text, now)

    def __enter__(self):
        return self

    def __exit__(self, error_type, error, traceback):
        if error_type is None:
            self.finish()
        else:
            self.abandon()
        return False

    def abandon(self):
        """Stops reporting without a final line (the loop failed or stopped early)."""
        if self._live_line:
            self.stream.write("\n")
            self.stream.flush()
            self._live_line = False
        self._finished = True

    # === Lines ===

    def line(self, now):
        """The line while running: done/total (percentage), rate, time left.

        The rate is measured from the first update on: the first item (a
        batch whose step Keras traces, a model's first call) is often much
        slower than the rest, and would make the time left far too long. So
        at the first update the time left is not known yet ("? left").
        """
        rate, steady = self._rate(now)
        parts = [self._count()]
        parts.append(f"{format_rate(rate)} {self.unit}/s" if rate else f"? {self.unit}/s")
        if self.total is not None:
            if rate and steady:
                parts.append(f"{format_duration(max(self.total - self.done, 0) / rate)} left")
            else:
                parts.append("? left")
        return self._with_detail(", ".join(parts))

    def final_line(self, now):
        """The last line: the count, the time taken and the mean rate."""
        elapsed = now - self._start
        text = f"{self._count()} in {format_duration(elapsed)}"
        if elapsed > 0:
            text += f", {format_rate(self.done / elapsed)} {self.unit}/s"
        return self._with_detail(text)

    def _rate(self, now):
        """(items per second, whether measured after the first update)."""
        first_time, first_done = self._first if self._first is not None else (self._start, 0)
        steady = self.done != first_done
        if not steady:  # only the first update yet: the rate since the start
            first_time, first_done = self._start, 0
        elapsed = now - first_time
        return ((self.done - first_done) / elapsed if elapsed > 0 else None), steady

    def _count(self):
        if self.total is None:
            return f"{self.what}: {self.done:,} {self.unit}"
        percent = 100 * self.done // self.total if self.total else 100
        return f"{self.what}: {self.done:,}/{self.total:,} {self.unit} ({percent}%)"

    def _with_detail(self, text):
        return f"{text}, {self.detail}" if self.detail else text

    def _due(self, now):
        """Without a terminal: another `every_fraction` done, or `every_seconds` passed."""
        if self.total is not None and self.done >= self.total:
            return False  # the final line says it
        if self.total:
            milestone = math.floor(self.done / self.total / self.every_fraction + 1e-9)
            if milestone > self._last_milestone:
                return True
        return now - self._last_write >= self.every_seconds

    def _write_plain(self, text, now):
        if self.total:
            self._last_milestone = math.floor(self.done / self.total / self.every_fraction + 1e-9)
        self.stream.write(text + "\n")
        self.stream.flush()
        self._last_write = now

    def _write_live(self, text, now):
        # \r back to the line start, \x1b[K clears what a longer previous line left.
        self.stream.write("\r" + text + "\x1b[K")
        self.stream.flush()
        self._live_line = True
        self._last_write = now


def known_length(items):
    """How many items `items` holds when it says so cheaply (`len`, or a `tf.data`
    dataset's cardinality), else None.

    >>> known_length([1, 2, 3]), known_length(x for x in "ab")
    (3, None)
    """
    try:
        return len(items)
    except TypeError:
        pass
    cardinality = getattr(items, "cardinality", None)
    if cardinality is not None:
        count = int(cardinality())
        return count if count >= 0 else None  # -1 infinite, -2 unknown
    return None


def track(items, what, total=None, unit="batches", **options):
    """`items` one by one, reporting progress (a `Progress`) as they are consumed.

    `total` defaults to `known_length(items)`. The final line is written when
    `items` is exhausted; a loop that stops early writes none.

    >>> list(track(range(3), "counting", enabled=False))
    [0, 1, 2]
    """
    progress = Progress(what, total if total is not None else known_length(items), unit,
                        **options)
    if not progress.enabled:
        yield from items
        return
    try:
        for item in items:
            yield item
            progress.advance()
    except BaseException:
        progress.abandon()
        raise
    progress.finish()


class ProgressCallback(keras.callbacks.Callback):
    """A `Progress` for `model.predict` and `model.evaluate` (their batches).

    Pass it in `callbacks=` with `verbose=0`; the number of batches is the
    step count Keras knows (a dataset's cardinality).

    Examples:
    >>> import io, numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> log = io.StringIO()
    >>> _ = model.predict(np.zeros((8, 2)), batch_size=4, verbose=0,
    ...                   callbacks=[ProgressCallback("predicting", stream=log, enabled=True)])
    >>> log.getvalue().splitlines()[-1].startswith("predicting: 2/2 batches (100%) in ")
    True
    """

    def __init__(self, what, **options):
        super().__init__()
        self.what = what
        self.options = options
        self.progress = None

    def _begin(self):
        self.progress = Progress(self.what, self.params.get("steps"), "batches", **self.options)

    def _batch_end(self, batch):
        self.progress.update(batch + 1)

    def on_predict_begin(self, logs=None):
        self._begin()

    def on_predict_batch_end(self, batch, logs=None):
        self._batch_end(batch)

    def on_predict_end(self, logs=None):
        self.progress.finish()

    def on_test_begin(self, logs=None):
        self._begin()

    def on_test_batch_end(self, batch, logs=None):
        self._batch_end(batch)

    def on_test_end(self, logs=None):
        self.progress.finish()
