"""Gradual unfreezing (ULMFiT): the order, the steps, and bit-identical frozen weights."""

import logging

import keras
import numpy as np
import pytest

from nlpzoo.layers import Encoder
from nlpzoo.tasks.training.gradual_unfreezing import (
    GradualUnfreezing,
    freeze_below_top_layers,
    unfreezing_groups,
)
from nlpzoo.zoo import build_model

EVERY_STEPS, BATCH = 2, 4
# What trains at each stage of a 2-block encoder, by path prefix; the head always.
HEAD = ("classification_head/",)
STAGES = [
    HEAD,
    HEAD + ("transformer/block_1/", "transformer/pooler/"),
    HEAD + ("transformer/block_1/", "transformer/pooler/", "transformer/block_0/"),
    HEAD + ("transformer/",),
]
# The step at which each part of the model starts to train.
THAW_STEP = {"classification_head/": 0, "transformer/block_1/": 2, "transformer/pooler/": 2,
             "transformer/block_0/": 4, "transformer/embeddings/": 6}


def _model(**options):
    return build_model("bert_tiny_classifier", num_classes=3, vocabulary_size=60, num_layers=2,
                       dropout=0.0, learning_rate=1e-2, **options)


def _data(steps, seed=0):
    rng = np.random.default_rng(seed)
    size = steps * BATCH
    features = {"token_ids": rng.integers(4, 60, (size, 12)).astype("int32"),
                "segment_ids": np.zeros((size, 12), "int32"),
                "padding_mask": np.ones((size, 12), "int32")}
    return features, rng.integers(0, 3, (size,)).astype("int32")


class _Recorder(keras.callbacks.Callback):
    """Test-only: at each batch's start (after GradualUnfreezing), the step, the trainable
    variables and every weight; at the end of training, the weights again."""

    def __init__(self):
        super().__init__()
        self.trainable, self.weights_at = {}, {}

    def _snapshot(self):
        return {v.path: np.array(v) for v in self.model.trainable_variables
                + self.model.non_trainable_variables if "/" in v.path}

    def on_train_batch_begin(self, batch, logs=None):
        step = int(self.model.optimizer.iterations)
        self.trainable[step] = sorted(v.path for v in self.model.trainable_variables)
        self.weights_at[step] = self._snapshot()

    def on_train_end(self, logs=None):
        self.weights_at[int(self.model.optimizer.iterations)] = self._snapshot()


def _part(path):
    return next(prefix for prefix in THAW_STEP if path.startswith(prefix))


@pytest.mark.parametrize("jit_compile", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_blocks_thaw_top_down_at_their_steps_and_not_before(jit_compile, caplog):
    model = _model(jit_compile=jit_compile)
    all_paths = sorted(v.path for v in model.trainable_variables)
    recorder = _Recorder()
    with caplog.at_level(logging.INFO):
        if jit_compile:  # one fit of 8 steps, over two epochs
            model.fit(*_data(4), epochs=2, batch_size=BATCH, shuffle=False, verbose=0,
                      callbacks=[GradualUnfreezing(EVERY_STEPS), recorder])
        else:  # two fits of 4 steps, the second with a fresh callback (as a resumed run)
            for seed in (0, 1):
                model.fit(*_data(4, seed), batch_size=BATCH, shuffle=False, verbose=0,
                          callbacks=[GradualUnfreezing(EVERY_STEPS), recorder])
                assert sorted(v.path for v in model.trainable_variables) == all_paths
    assert model.jit_compile is jit_compile  # really compiled, not silently turned off

    # The trainable set, step by step: head only; + block 1 and the pooler; + block 0;
    # + the embeddings.
    assert sorted(recorder.trainable) == list(range(8))
    for step, trainable in recorder.trainable.items():
        prefixes = STAGES[step // EVERY_STEPS]
        assert trainable == [p for p in all_paths if p.startswith(prefixes)], step

    # Each part is bit-identical until its step and moves at it. weights_at[s] holds the
    # weights before step s (weights_at[8]: after the last step).
    initial = recorder.weights_at[0]
    for path in all_paths:
        thaw = THAW_STEP[_part(path)]
        for step in range(1, thaw + 1):
            np.testing.assert_array_equal(recorder.weights_at[step][path], initial[path],
                                          err_msg=f"{path} moved before step {thaw}")
        moved = recorder.weights_at[thaw + 1][path] - recorder.weights_at[thaw][path]
        assert np.abs(moved).max() > 0, f"{path} did not move at step {thaw}"
        assert np.abs(recorder.weights_at[8][path] - initial[path]).max() > 0, path

    messages = [r.getMessage() for r in caplog.records if "gradual unfreezing" in r.getMessage()]
    assert messages[:4] == [
        "gradual unfreezing: step 0, head only (encoder frozen)",
        "gradual unfreezing: step 2, block 1 and pooler trainable",
        "gradual unfreezing: step 4, blocks 0-1 and pooler trainable",
        "gradual unfreezing: step 6, everything trainable (embeddings too)",
    ]


def test_the_groups_in_thawing_order():
    encoder = Encoder(vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=8,
                      intermediate_dim=16)
    groups = unfreezing_groups(encoder)
    assert [group.layers for group in groups] == [
        ("block_1", "pooler"), ("block_0",), ("embeddings",)]
    paths = [{v.path.split("/")[1] for v in group.variables} for group in groups]
    assert paths == [{"block_1", "pooler"}, {"block_0"}, {"embeddings"}]
    # Every weight of the transformer is in exactly one group.
    grouped = [id(v) for group in groups for v in group.variables]
    assert sorted(grouped) == sorted(id(v) for v in encoder.transformer.weights)
    callback = GradualUnfreezing(3, transformer=encoder)
    assert [callback.stage(step) for step in (0, 2, 3, 6, 9, 100)] == [0, 0, 1, 2, 3, 3]
    assert callback.trainable_groups(0) == [] and callback.trainable_groups(3) == groups


def test_a_pre_ln_encoder_thaws_its_final_norm_with_the_top_block():
    encoder = Encoder(vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=8,
                      intermediate_dim=16, norm_first=True)
    assert unfreezing_groups(encoder)[0].layers == ("block_1", "final_norm", "pooler")


def test_a_pooler_norm_thaws_and_freezes_with_the_pooler():
    encoder = Encoder(vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=8,
                      intermediate_dim=16, norm_first=True, pooler_activation="gelu",
                      pooler_norm=True)
    assert unfreezing_groups(encoder)[0].layers == (
        "block_1", "final_norm", "pooler", "pooler_norm")
    norm_weights = {id(v) for v in encoder.transformer.pooler_layer_norm.weights}
    # Stage 1 thaws it with the pooler (it once thawed last, with the embeddings).
    stage_one = {id(v) for v in GradualUnfreezing(1, transformer=encoder).trainable_at(1)}
    assert norm_weights <= stage_one
    freeze_below_top_layers(encoder, 1)
    assert norm_weights <= {id(v) for v in encoder.trainable_weights}
    assert {id(v) for v in encoder.transformer.blocks[0].weights} <= {
        id(v) for v in encoder.non_trainable_weights}


def test_shared_layers_are_one_block():
    encoder = Encoder(vocabulary_size=50, num_layers=4, num_heads=2, hidden_dim=8,
                      intermediate_dim=16, share_layers=True)
    callback = GradualUnfreezing(5, transformer=encoder)
    assert [group.layers for group in callback.groups] == [("block_0", "pooler"),
                                                           ("embeddings",)]
    assert [callback.stage(step) for step in (0, 5, 10, 15)] == [0, 1, 2, 2]
    assert callback.describe(1) == "block 0 and pooler trainable"


def test_fit_must_start_with_a_trainable_encoder():
    model = _model(freeze_encoder=True)
    with pytest.raises(ValueError, match="start fit with a trainable encoder"):
        model.fit(*_data(2), batch_size=BATCH, verbose=0, callbacks=[GradualUnfreezing(1)])


def test_bad_every_steps():
    for every_steps in (0, -1, 1.5):
        with pytest.raises(ValueError, match="every_steps"):
            GradualUnfreezing(every_steps)
