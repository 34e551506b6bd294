"""Where the tests find the repository, its bundled samples and the real data sets."""

import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SHARED_DATA = os.path.abspath(os.path.join(ROOT, "..", "shared", "data"))
TREC = os.path.join(ROOT, "samples", "trec")
CONLL = os.path.join(ROOT, "samples", "conll2003")
MRPC = os.path.join(ROOT, "samples", "mrpc")



def shared_data_path(*parts):
    """Path under ../shared/data, or skip the test when the folder is absent."""
    path = os.path.join(SHARED_DATA, *parts)
    if not os.path.exists(path):
        pytest.skip(
            f"real data set not found at {path}: it ships with CI machines, "
            "not with a clone of the repository"
        )
    return path
