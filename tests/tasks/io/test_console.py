"""tasks.io.console: the stderr filter drops TensorFlow's C++ start-up lines and nothing else."""

import subprocess
import sys
import textwrap

from nlpzoo.tasks.io.console import is_tensorflow_noise, verbosity_requested
from tests.helpers.paths import ROOT

# Lines TensorFlow 2.21 prints at start-up on these machines (copied from a run).
NOISE = [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "I0000 00:00:1795583364.852822     826 port.cc:153] oneDNN custom operations are on. "
    "You may see slightly different numerical results.",
    "I0000 00:00:1795583364.853179     826 cudart_stub.cc:31] Could not find cuda drivers "
    "on your machine, GPU will not be used.",
    "E0000 00:00:1795583366.1 826 cuda_platform.cc:51] failed call to cuInit: INTERNAL",
    "I0000 00:00:1795583366.2 826 cpu_feature_guard.cc:210] This TensorFlow binary is optimized",
    "To enable the following instructions: AVX512F AMX_TILE, in other operations, rebuild "
    "TensorFlow with the appropriate compiler flags.",
]
KEPT = ["train.txt:3: tag 'X' is not O nor B-/I-/E-/S- followed by an entity type",
        "W1125 05:11:46.090445 140502383459200 windows.py:261] 8 of 12 training sentences "
        "are longer than max_seq_length=32",  # our own warning, through Python's absl
        "F0000 00:00:1795583366.3 826 check.cc:9] Check failed: a fatal error says why"]


def test_noise_is_recognised_and_other_lines_are_not():
    assert all(is_tensorflow_noise(line) for line in NOISE)
    assert not any(is_tensorflow_noise(line) for line in KEPT)


def test_verbosity_flag_forms():
    assert verbosity_requested(["x", "--verbosity", "1"])
    assert verbosity_requested(["x", "-v=2"])
    assert not verbosity_requested(["x", "--verbosity=0"])
    assert not verbosity_requested(["x", "--verbosity=-1"])
    assert not verbosity_requested(["x"])


# The scripts below play one of our binaries (an `nlpzoo-` command): `import nlpzoo` then
# leaves TensorFlow unloaded until the filter is on, as when a binary starts.
AS_A_BINARY = "import sys; sys.argv[0] = 'nlpzoo-test'\n"


def _run(script):
    return subprocess.run([sys.executable, "-c", AS_A_BINARY + textwrap.dedent(script)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_filter_drops_noise_written_below_python_and_passes_the_rest():
    # os.write(2, ...) is what C++ logging does: below sys.stderr.
    result = _run(f"""
        import os, sys
        from nlpzoo.tasks.io.console import StderrFilter
        StderrFilter().start()
        lines = {NOISE[:3] + KEPT[:1] + NOISE[3:] + KEPT[1:]!r}
        for line in lines:
            os.write(2, (line + "\\n").encode())
        print("python line", file=sys.stderr)
        os.write(2, b"a last line without its newline")
        """)
    assert result.returncode == 0, result.stderr
    assert result.stderr == (KEPT[0] + "\n" + KEPT[1] + "\n" + KEPT[2] + "\npython line\n"
                             "a last line without its newline")


def test_a_traceback_still_shows_in_full():
    result = _run("""
        import os
        from nlpzoo.tasks.io.console import StderrFilter
        StderrFilter().start()
        os.write(2, b"I0000 00:00:1.0 1 port.cc:153] oneDNN custom operations are on.\\n")
        raise RuntimeError("a real error")
        """)
    assert result.returncode == 1
    assert "port.cc" not in result.stderr
    assert result.stderr.startswith("Traceback (most recent call last):")
    assert result.stderr.rstrip().endswith("RuntimeError: a real error")


def test_quiet_tensorflow_on_an_import_of_tensorflow():
    script = """
        import sys
        from nlpzoo.tasks.io.console import quiet_tensorflow
        quiet_tensorflow(sys.argv)
        import tensorflow as tf
        tf.config.list_physical_devices()
        print("after tensorflow", file=sys.stderr)
        """
    quiet = subprocess.run([sys.executable, "-c", AS_A_BINARY + textwrap.dedent(script)],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == "after tensorflow\n"
    loud = subprocess.run([sys.executable, "-c", AS_A_BINARY + textwrap.dedent(script),
                           "--verbosity=1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert loud.returncode == 0, loud.stderr
    assert any(is_tensorflow_noise(line) for line in loud.stderr.splitlines()), loud.stderr


def test_retracing_warnings_and_tensorflow_info_are_dropped_other_logs_pass():
    result = _run("""
        import sys
        from nlpzoo.tasks.io.console import quiet_tensorflow
        quiet_tensorflow(["train.py"])
        import tensorflow as tf
        from absl import logging
        tf.get_logger().warning("5 out of the last 5 calls to <function f> triggered "
                                "tf.function retracing. Tracing is expensive")
        logging.info("Assets written to: /tmp/x/assets")
        logging.info("learning a 300-token WordPiece vocabulary")
        tf.get_logger().warning("a real TensorFlow warning")
        """)
    assert result.returncode == 0, result.stderr
    assert "retracing" not in result.stderr and "Assets written" not in result.stderr
    assert "a real TensorFlow warning" in result.stderr
