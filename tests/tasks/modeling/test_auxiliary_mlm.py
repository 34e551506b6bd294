"""The auxiliary masked-LM loss of fine-tuning (`--auxiliary_mlm_weight`): the batched
in-graph masking, the loss against a NumPy reference, where its gradient goes, λ's anneal,
saving, and tools/train.py end to end."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.layers import transformer_of
from nlpzoo.layers.keras_internals import compiled_loss
from nlpzoo.tasks.modeling.auxiliary_mlm import AuxiliaryMaskedLM, auxiliary_mlm_for
from nlpzoo.tasks.text.masking import batch_mlm_mask
from nlpzoo.tasks.registry import get_task
from nlpzoo.tasks.words.conll import TaggedSentence
from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
from tests.helpers.binaries import json_line, run_tool
from tests.helpers.paths import TREC
from tests.tools.test_train_binary import _scalars
from nlpzoo.zoo import build_task_model

SPECIAL = (0, 1, 2, 3, 4)  # [PAD] [UNK] [CLS] [SEP] [MASK]
VOCABULARY = 60


def _batch(rows=6, length=14, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, VOCABULARY, (rows, length)).astype("int32")
    ids[:, 0] = 2
    for row in range(rows):
        end = length - 1 - (row * 2) % (length - 3)
        ids[row, end] = 3
        ids[row, end + 1:] = 0
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids),
            "padding_mask": (ids != 0).astype("int32")}


def _mask(ids, seed, **options):
    options = dict(vocabulary_size=VOCABULARY, mask_id=4, max_predictions=5,
                   special_ids=SPECIAL, **options)
    return {name: value.numpy() for name, value in
            batch_mlm_mask(ids, seed=seed, **options).items()}


def test_batch_masking_selects_the_budget_of_eligible_tokens_and_replaces_only_them():
    ids = _batch()["token_ids"]
    out = _mask(ids, [3, 9])
    _check_masks(ids, out)
    # The same seed gives the same masks; another seed others.
    again, other = _mask(ids, [3, 9]), _mask(ids, [3, 10])
    assert all((again[name] == out[name]).all() for name in out)
    assert not (other["mask_positions"] == out["mask_positions"]).all()


def test_batch_masking_treats_80_10_10_and_never_draws_special_ids():
    ids = np.tile(_batch(rows=1, length=40)["token_ids"], (500, 1))
    ids[:, 1:-1] = 7  # every eligible token is 7, so a changed id shows its treatment
    out = _mask(ids, [1, 2], mask_rate=0.15)
    used = out["mask_weights"] > 0
    new = np.take_along_axis(out["masked_token_ids"], out["mask_positions"], axis=1)[used]
    masked, kept = np.mean(new == 4), np.mean(new == 7)
    assert abs(masked - 0.8) < 0.03 and abs(kept - 0.1 - 0.1 / 55) < 0.03
    assert not np.isin(new[(new != 4) & (new != 7)], SPECIAL).any()


def _check_masks(ids, out):
    for row in range(len(ids)):
        eligible = np.flatnonzero(~np.isin(ids[row], SPECIAL))
        budget = min(max(int(np.floor(0.15 * len(eligible) + 0.5)), 1), 5)
        used = out["mask_weights"][row] > 0
        assert used.sum() == budget
        positions = out["mask_positions"][row][used]
        assert len(set(positions)) == budget and set(positions) <= set(eligible)
        assert (out["target_ids"][row][used] == ids[row][positions]).all()
        assert (out["target_ids"][row][~used] == -1).all()
        unchanged = np.setdiff1d(np.arange(ids.shape[1]), positions)
        assert (out["masked_token_ids"][row][unchanged] == ids[row][unchanged]).all()


def test_batch_masking_compiles_under_xla():
    # XLA's Philox draws other numbers than TensorFlow's kernels: the same rules, other masks.
    ids = _batch()["token_ids"]
    options = dict(vocabulary_size=VOCABULARY, mask_id=4, max_predictions=5,
                   special_ids=SPECIAL)
    compiled = tf.function(lambda x, s: batch_mlm_mask(x, seed=s, **options), jit_compile=True)
    seed = tf.constant([3, 9], tf.int64)
    out = {name: value.numpy() for name, value in compiled(tf.constant(ids), seed).items()}
    _check_masks(ids, out)
    again = compiled(tf.constant(ids), seed)
    assert all((again[name].numpy() == out[name]).all() for name in out)
    # Shorter than max_predictions: the dummy keys keep top_k valid.
    short = _mask(np.array([[2, 9, 3]]), [0, 1])
    assert short["mask_weights"].tolist() == [[1.0, 0.0, 0.0, 0.0, 0.0]]


def _classifier(weight=0.5, anneal_steps=0):
    keras.utils.set_random_seed(1)
    model = build_task_model(get_task("classification"), "bert_tiny", num_classes=3,
                             vocabulary_size=VOCABULARY, total_steps=10, warmup_steps=0,
                             learning_rate=1e-3, dropout=0.0, attention_dropout=0.0)
    if weight:
        model.attach_auxiliary_mlm(AuxiliaryMaskedLM(
            weight, vocabulary_size=VOCABULARY, mask_id=4, special_ids=SPECIAL,
            max_predictions=5, anneal_steps=anneal_steps, seed=3, name="auxiliary_mlm"))
    return model


def _reference_mlm_loss(model, features, step):
    """The masked-LM cross-entropy in NumPy, from the same masks and the model's weights."""
    objective = model.auxiliary_mlm
    seed = tf.stack([tf.constant(objective.seed * 7919, tf.int64),
                     tf.constant(step, tf.int64)])
    masked = _mask(features["token_ids"], seed)
    inputs = dict(features, token_ids=masked["masked_token_ids"])
    sequence = transformer_of(model.encoder)(**inputs)["sequence_output"].numpy()
    head = objective.head
    gathered = np.take_along_axis(sequence, masked["mask_positions"][..., None], axis=1)
    hidden = head.transform(gathered).numpy()  # dense + GELU
    hidden = head.layer_norm(hidden).numpy()
    table = transformer_of(model.encoder).token_embedding.embeddings.numpy()
    logits = hidden @ table.T + head.decoder.bias.numpy()
    logits -= logits.max(-1, keepdims=True)
    log_probabilities = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    used = masked["mask_weights"] > 0
    targets = np.maximum(masked["target_ids"], 0)
    picked = np.take_along_axis(log_probabilities, targets[..., None], axis=-1)[..., 0]
    return -picked[used].mean()


def test_the_loss_adds_weight_times_the_masked_lm_cross_entropy():
    features, labels = _batch(), np.array([0, 1, 2, 1, 0, 2])
    model = _classifier(weight=0.5, anneal_steps=8)
    plain = _classifier(weight=0)
    plain.set_weights(model.get_weights()[:len(plain.weights)])
    model.optimizer.iterations.assign(2)
    predictions = model(features, training=False)
    total = float(model.compute_loss(features, labels, predictions, training=True))
    task = float(plain.compute_loss(features, labels, predictions, training=True))
    mlm = _reference_mlm_loss(model, features, step=2)
    np.testing.assert_allclose(total, task + 0.5 * (1 - 2 / 8) * mlm, rtol=1e-5)
    assert float(model.auxiliary_mlm.loss_tracker.result()) == pytest.approx(mlm, rel=1e-5)
    # At the end of the anneal, and in validation, nothing is added.
    model.optimizer.iterations.assign(8)
    ended = float(model.compute_loss(features, labels, predictions, training=True))
    validation = float(model.compute_loss(features, labels, predictions, training=False))
    assert ended == pytest.approx(task, rel=1e-6) and validation == pytest.approx(task, rel=1e-6)
    with pytest.raises(ValueError, match="must be > 0"):
        AuxiliaryMaskedLM(0.0, vocabulary_size=VOCABULARY, mask_id=4, special_ids=SPECIAL)


def test_its_head_takes_the_encoder_gelu_form_and_layer_norm_epsilon():
    model = build_task_model(get_task("classification"), "bert_tiny", num_classes=3,
                             vocabulary_size=VOCABULARY, gelu_approximate=True,
                             layer_norm_epsilon=1e-5)
    model.attach_auxiliary_mlm(AuxiliaryMaskedLM(
        1.0, vocabulary_size=VOCABULARY, mask_id=4, special_ids=SPECIAL, max_predictions=5))
    head = model.auxiliary_mlm.head
    assert head.layer_norm.epsilon == pytest.approx(1e-5)
    x = np.linspace(-3, 3, 8, dtype="float32").reshape(1, 8)
    tanh_gelu = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(keras.ops.convert_to_numpy(head.transform.activation(x)),
                               tanh_gelu, atol=1e-6)


def test_its_gradient_reaches_the_encoder_and_its_head_but_not_the_task_head():
    features, labels = _batch(), np.array([0, 1, 2, 1, 0, 2])
    model = _classifier(weight=1.0)
    with tf.GradientTape() as tape:
        predictions = model(features, training=False)
        task = compiled_loss(model, labels, predictions)
        total = model.compute_loss(features, labels, predictions, training=True)
        auxiliary = total - task
    variables = model.trainable_variables
    gradients = dict(zip([v.path for v in variables], tape.gradient(auxiliary, variables)))

    def norm(prefix):
        found = [g for path, g in gradients.items() if path.startswith(prefix)]
        assert found, prefix
        return sum(float(tf.norm(g)) for g in found if g is not None)

    assert norm("transformer/") > 0 and norm("auxiliary_mlm_head/") > 0
    head = [path for path in gradients if not path.startswith(("transformer/",
                                                                "auxiliary_mlm_head/"))]
    assert head and all(gradients[path] is None or float(tf.norm(gradients[path])) == 0
                        for path in head)


@pytest.mark.slow  # trains through the binary: about 30 s
def test_a_tagger_trains_with_it_and_a_saved_model_restores_it(tmp_path):
    task = get_task("tagging")
    tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b",
                                    "c", "d", "e"])
    keras.utils.set_random_seed(2)
    model = build_task_model(task, "bert_tiny", labels=["O", "B-X", "I-X"], head="crf",
                             vocabulary_size=10,
                             total_steps=4, warmup_steps=0, learning_rate=1e-3)
    model.attach_auxiliary_mlm(auxiliary_mlm_for(tokenizer, 0.3, max_seq_length=16))
    preprocessor = task.make_preprocessor(tokenizer.vocabulary, max_seq_length=16)
    examples = [TaggedSentence(words=w, tags=t) for w, t in [
        (["a", "b", "c"], ["O", "B-X", "I-X"]), (["d", "e"], ["B-X", "O"]),
        (["e", "a", "b", "d"], ["O", "O", "B-X", "O"])]]
    dataset = task.make_dataset(examples, preprocessor, ["O", "B-X", "I-X"], batch_size=3)
    history = model.fit(dataset, epochs=2, verbose=0).history
    assert history["auxiliary_mlm_loss"][0] > 0 and len(history["loss"]) == 2
    path = str(tmp_path / "tagger.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert restored.auxiliary_mlm.get_config() == model.auxiliary_mlm.get_config()
    for name, value in model.evaluate(dataset, return_dict=True, verbose=0).items():
        assert restored.evaluate(dataset, return_dict=True, verbose=0)[name] == \
            pytest.approx(value, rel=1e-5), name


# slow: the flag's wiring; the in-process tagger test above checks the loss and its reload
@pytest.mark.slow
def test_train_binary_adds_the_auxiliary_loss(tmp_path):
    model_dir = str(tmp_path / "run")
    common = ["--task=classification", "--preset=bert_tiny", "--epochs=1", "--batch_size=32",
              f"--train_data={TREC}/train.label", f"--eval_data={TREC}/dev.label",
              "--vocab_size=200", "--max_seq_length=32", "--auxiliary_mlm_weight=0.5"]
    refused = run_tool("train.py", *common, "--freeze_encoder", f"--model_dir={model_dir}")
    assert refused.returncode != 0
    assert "cannot be combined with --freeze_encoder" in refused.stderr.strip().splitlines()[-1]
    result = run_tool("train.py", *common, "--auxiliary_mlm_anneal", f"--model_dir={model_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    config = json.load(open(os.path.join(model_dir, "config.json")))
    assert config["auxiliary_mlm_weight"] == 0.5 and config["auxiliary_mlm_anneal"] is True
    metrics = json_line(result.stdout)
    assert metrics["auxiliary_mlm_loss"] > 0 and 0 <= metrics["accuracy"] <= 1
    train = _scalars(os.path.join(model_dir, "logs", "train"))
    assert train["epoch_auxiliary_mlm_loss"][0] > 0
    assert train["epoch_loss"][0] > 0
