"""Screenshots of TensorBoard's dashboards of real runs, taken in headless Chromium.

    python tools/tensorboard_screenshots.py --logdir runs/ --output_dir docs/images

Starts `tensorboard` on a free localhost port against --logdir, waits until it
has read the runs, and saves one PNG per view into --output_dir (each written
beside its target and renamed over it): the per-type F1 curves, the per-step
loss and learning rate, the HParams table and the decoded validation
examples. Needs Chromium (Debian: `apt-get install chromium`).
"""

import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import flags  # noqa: E402

from nlpzoo.tools.cli.errors import UserError, run  # noqa: E402
from nlpzoo.tools.cli.tensorboard_server import TensorBoardServer  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("logdir", None, "The folder of runs to show (a model_dir's logs/, or a "
                    "folder of model directories).")
flags.DEFINE_string("output_dir", "docs/images", "Where the PNG files go.")
flags.DEFINE_string("chromium", "chromium", "The Chromium (or Chrome) program.")
flags.DEFINE_integer("width", 1400, "Window width in pixels.", lower_bound=200)
flags.DEFINE_integer("height", 900, "Window height in pixels.", lower_bound=200)
flags.DEFINE_integer("render_ms", 15000, "Virtual time the page gets to load its data.",
                     lower_bound=100)
flags.mark_flag_as_required("logdir")

# File name → (the dashboard's URL fragment, window width as a multiple of --width).
# Tag filters are regular expressions; the HParams table is wide (settings, then metrics).
VIEWS = {
    "tensorboard_entity_f1.png": ("scalars&tagFilter=entity%2F.*%2Ff1", 1),
    "tensorboard_steps.png": ("scalars&tagFilter=%2Fstep", 1),
    "tensorboard_hparams.png": ("hparams", 2),
    "tensorboard_text.png": ("text", 1),
}


def _screenshot(chromium, url, path, width):
    """Saves Chromium's rendering of `url` to `path`, atomically."""
    handle, partial = tempfile.mkstemp(suffix=".png", dir=os.path.dirname(path))
    os.close(handle)
    try:
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", f"--window-size={width},{FLAGS.height}",
                        f"--virtual-time-budget={FLAGS.render_ms}", f"--screenshot={partial}",
                        url], check=True, capture_output=True, timeout=300)
        if os.path.getsize(partial) == 0:
            raise UserError(f"{chromium} wrote an empty screenshot of {url}")
        os.chmod(partial, 0o644)  # mkstemp makes it private; a picture for the docs is not
        os.replace(partial, path)
    except subprocess.CalledProcessError as error:
        raise UserError(f"{chromium} failed on {url}: {error.stderr.decode()[-500:]}")
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def main(argv):
    if not os.path.isdir(FLAGS.logdir):
        raise UserError(f"--logdir={FLAGS.logdir} is not a folder")
    chromium = shutil.which(FLAGS.chromium)
    if chromium is None:
        raise UserError(f"--chromium={FLAGS.chromium} was not found (Debian: apt-get "
                        "install chromium)")
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    with TensorBoardServer(FLAGS.logdir) as server:
        try:
            runs = server.wait_until_loaded()
        except (TimeoutError, RuntimeError) as error:
            raise UserError(f"--logdir={FLAGS.logdir}: {error}")
        print(f"{len(runs)} runs: {', '.join(sorted(runs))}", flush=True)
        for name, (view, widths) in VIEWS.items():
            path = os.path.join(FLAGS.output_dir, name)
            _screenshot(chromium, f"{server.url}/#{view}", path, widths * FLAGS.width)
            print(path, flush=True)


if __name__ == "__main__":
    run(main)
