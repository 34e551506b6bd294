"""tasks.probing.plot: the accuracy-by-layer image."""

import numpy as np
from PIL import Image

from nlpzoo.tasks.probing.plot import COLOURS, accuracy_plot, save_png


def _has_colour(image, colour):
    return bool(np.all(image == np.array(colour, np.uint8), axis=-1).any())


def test_curves_are_drawn_in_their_colours_and_none_is_left_out():
    image = accuracy_plot(range(4), {"pretrained": [0.9, 0.95, 0.97, 0.96], "control": None},
                          "column 2 (pos)", baseline=0.2)
    assert image.shape == (420, 640, 3) and image.dtype == np.uint8
    assert _has_colour(image, COLOURS[0]) and not _has_colour(image, COLOURS[1])
    both = accuracy_plot(range(4), {"pretrained": [0.9] * 4, "control": [0.5] * 4})
    assert _has_colour(both, COLOURS[0]) and _has_colour(both, COLOURS[1])


def test_a_higher_accuracy_is_drawn_higher():
    rows = []
    for accuracy in (0.6, 0.9):
        image = accuracy_plot([0, 1], {"only": [accuracy, accuracy]}, baseline=None)
        plot_area = image[:, 64:490]  # inside the axes, left of the legend
        rows.append(np.nonzero(np.all(plot_area == COLOURS[0], axis=-1))[0].mean())
    assert rows[1] < rows[0]  # image rows grow downwards


def test_save_png_round_trips(tmp_path):
    image = accuracy_plot([0, 1, 2], {"a": [0.1, 0.5, 0.9]})
    path = str(tmp_path / "plot.png")
    save_png(image, path)
    with Image.open(path) as loaded:
        assert loaded.format == "PNG"
        np.testing.assert_array_equal(np.asarray(loaded), image)
