"""Shared pytest set-up: quiet TensorFlow, fixed seeds, float32 policy per test."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import pytest  # noqa: E402

SHARED_DATA = os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
)


@pytest.fixture(autouse=True)
def _reset_keras_state():
    """Every test starts from float32 and a fixed seed, whatever the last one did."""
    keras.mixed_precision.set_global_policy("float32")
    keras.utils.set_random_seed(1234)
    yield
    keras.mixed_precision.set_global_policy("float32")


def shared_data_path(*parts):
    """Path under ../shared/data, or skip the test when the folder is absent."""
    path = os.path.join(SHARED_DATA, *parts)
    if not os.path.exists(path):
        pytest.skip(
            f"real data set not found at {path}: it ships with CI machines, "
            "not with a clone of the repository"
        )
    return path
