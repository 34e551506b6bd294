"""Checkpoint handles (`hf://…`) resolve through the Hugging Face cache; nothing is downloaded:
the cache is a local directory laid out as huggingface_hub lays it out, and the Hub is off."""

import os

import numpy as np
import pytest
from huggingface_hub import constants

import nlpzoo
from nlpzoo.zoo import load_tokenizer
from nlpzoo.zoo.checkpoints import handles
from tests.zoo.test_hf_import import _minilm_dir

HANDLE = "hf://sentence-transformers/all-MiniLM-L6-v2"
COMMIT = "c9745ed1d9f207416be6d2e6f8de32d1f16199bf"


@pytest.fixture(scope="module")
def minilm_dir():
    return _minilm_dir()


@pytest.fixture
def offline_cache(tmp_path, monkeypatch, minilm_dir):
    """An HF cache holding all-MiniLM-L6-v2 (its files linked, not copied), the Hub off."""
    repo = tmp_path / "hub" / "models--sentence-transformers--all-MiniLM-L6-v2"
    snapshot = repo / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    for name in os.listdir(minilm_dir):
        if os.path.isfile(os.path.join(minilm_dir, name)):
            os.symlink(os.path.join(minilm_dir, name), snapshot / name)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    handles.resolve_handle.cache_clear()
    yield str(snapshot)
    handles.resolve_handle.cache_clear()


def test_build_model_from_a_handle_resolves_through_the_cache(offline_cache, minilm_dir):
    model = nlpzoo.build_model(HANDLE, task="classification", num_classes=6)
    assert model.output_shape == (None, 6)
    assert handles.resolve_handle(HANDLE) == offline_cache
    # The checkpoint's weights and tokenizer came with it.
    ours = load_tokenizer(HANDLE).encode("The quick brown fox")
    assert ours == load_tokenizer(minilm_dir).encode("The quick brown fox")
    reference = nlpzoo.zoo.load_encoder(minilm_dir)
    word_embeddings = model.get_layer("encoder").token_embedding.embeddings.numpy()
    np.testing.assert_array_equal(word_embeddings,
                                  reference.token_embedding.embeddings.numpy())
    (prediction,) = model.predict(["What is a fox ?"], verbose=0)  # raw text in
    assert prediction["label"] in [str(index) for index in range(6)]


def test_a_handle_missing_from_the_offline_cache_is_one_clear_error(offline_cache):
    with pytest.raises(ValueError, match=r"^hf://google-bert/bert-base-cased: cannot be "
                                         r"fetched .* or found in its cache"):
        nlpzoo.load_pretrained("hf://google-bert/bert-base-cased", "tagging",
                               labels=["O", "B-PER"])


@pytest.mark.parametrize("handle", ["hf://no-org", "hf://a/b/c", "hf://a/b@", "kaggle://x"])
def test_malformed_handles_say_what_a_handle_is(handle):
    with pytest.raises(ValueError, match="handle is"):
        handles.resolve_handle(handle)


def test_a_handle_without_a_task_is_refused():
    with pytest.raises(ValueError, match="a checkpoint has no task; name one"):
        nlpzoo.build_model(HANDLE, num_classes=2)


def test_every_listed_checkpoint_names_an_encoder_preset():
    listed = nlpzoo.list_presets(pretrained=True)
    assert HANDLE in listed and "hf://FacebookAI/roberta-base" in listed
    missing = {handle: preset for handle, preset in listed.items()
               if preset not in nlpzoo.list_presets("encoder")}
    assert not missing, missing
