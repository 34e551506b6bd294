"""A line plot of accuracy by layer, drawn with Pillow (no plotting library needed).

Pillow comes with TensorBoard (it is declared in setup.cfg too); the same
RGB array becomes the PNG file and the TensorBoard image.
"""

import math

import numpy as np
from PIL import Image, ImageDraw, ImageFont

# Colours of the curves, in the order they are given (blue, orange, green, red).
COLOURS = ((31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40))
_SIZE = (640, 420)
_MARGIN = dict(left=64, right=150, top=40, bottom=52)


def accuracy_plot(layers, curves, title="", baseline=None):
    """An RGB image (uint8 [height, width, 3]) of accuracy by layer, one line per curve.

    The y axis ends at 1 and starts at the tenth below the lowest point (so
    that curves between 0.85 and 0.97 are not squeezed into a tenth of the
    plot); each point is marked and the legend names the curves. Curves that
    are None are left out. A `baseline` (the majority label's accuracy) is a
    dashed grey line, and its value is in the legend (the line is left out
    when it falls below the axis).

    Args:
        layers: the x values (layer numbers, 0 = embeddings).
        curves: {name: accuracies, one per layer}, drawn in order.
        title: a line of text above the plot.
        baseline: an accuracy to draw across every layer (None: none).

    Examples:
    >>> image = accuracy_plot([0, 1, 2], {"pretrained": [0.8, 0.9, 0.95],
    ...                                   "control": [0.7, 0.6, 0.5]}, "POS")
    >>> image.shape, image.dtype.name
    ((420, 640, 3), 'uint8')
    """
    width, height = _SIZE
    image = Image.new("RGB", _SIZE, "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=13)
    left, right = _MARGIN["left"], width - _MARGIN["right"]
    top, bottom = _MARGIN["top"], height - _MARGIN["bottom"]
    layers = list(layers)
    drawn = [(name, list(values)) for name, values in curves.items() if values is not None]
    lowest = min([value for _, values in drawn for value in values] + [1.0])
    low = max(0.0, math.floor(lowest * 10 - 1e-9) / 10)
    step = 0.05 if 1 - low <= 0.5 else 0.1
    span = max(layers[-1] - layers[0], 1) if layers else 1

    def x_of(layer):
        return left + (layer - layers[0]) / span * (right - left)

    def y_of(accuracy):
        return bottom - (accuracy - low) / (1 - low) * (bottom - top)

    # Grid and y ticks, x ticks at every layer.
    for tick in range(round((1 - low) / step) + 1):
        value = low + tick * step
        y = y_of(value)
        draw.line([(left, y), (right, y)], fill=(225, 225, 225))
        draw.text((left - 8, y), f"{value:.2f}", fill="black", font=font, anchor="rm")
    for layer in layers:
        draw.line([(x_of(layer), bottom), (x_of(layer), bottom + 4)], fill="black")
        draw.text((x_of(layer), bottom + 8), str(layer), fill="black", font=font, anchor="mt")
    draw.rectangle([(left, top), (right, bottom)], outline="black")
    draw.text(((left + right) / 2, height - 8), "layer (0 = embeddings)", fill="black",
              font=font, anchor="mb")
    draw.text((left, top - 8), "accuracy", fill="black", font=font, anchor="rb")
    draw.text(((left + right) / 2, 14), title, fill="black", font=font, anchor="mm")

    legend = len(drawn)
    if baseline is not None:
        y = y_of(baseline)
        if baseline >= low:  # else below the axis: named in the legend only
            for x in range(left, right, 10):
                draw.line([(x, y), (min(x + 5, right), y)], fill="grey", width=1)
        legend_y = top + 10 + 20 * legend
        draw.line([(right + 12, legend_y), (right + 17, legend_y)], fill="grey")
        draw.line([(right + 22, legend_y), (right + 27, legend_y)], fill="grey")
        draw.text((right + 42, legend_y), f"majority {baseline:.2f}", fill="black",
                  font=font, anchor="lm")
    for index, (name, values) in enumerate(drawn):
        colour = COLOURS[index % len(COLOURS)]
        points = [(x_of(layer), y_of(value)) for layer, value in zip(layers, values)]
        if len(points) > 1:
            draw.line(points, fill=colour, width=2, joint="curve")
        for x, y in points:
            draw.ellipse([(x - 3, y - 3), (x + 3, y + 3)], fill=colour)
        legend_y = top + 10 + 20 * index
        draw.line([(right + 12, legend_y), (right + 36, legend_y)], fill=colour, width=2)
        draw.text((right + 42, legend_y), name, fill="black", font=font, anchor="lm")
    return np.asarray(image, dtype=np.uint8)


def save_png(image, path):
    """Writes an RGB uint8 array as a PNG file."""
    Image.fromarray(image).save(path, format="PNG")
