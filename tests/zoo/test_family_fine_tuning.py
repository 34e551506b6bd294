"""Every encoder family fine-tunes from a Hugging Face directory with its own tokenizer.

Each checkpoint is a tiny encoder of the family, exported as transformers lays it out,
beside the tokenizer fixture of its scheme (tests/fixtures/tokenizers/: written by
transformers 5.24): RoBERTa and ModernBERT with byte-level BPE, XLM-R, ALBERT and
DeBERTa-v3 with SentencePiece, DistilBERT and ELECTRA with WordPiece. `load_pretrained`
puts a head on it; the model reads raw text with the checkpoint's tokenizer, trains, goes
through a `.keras` file and predicts the same. `tools/train.py --init_checkpoint` does the
same for two of them.
The default run covers each tokenizer scheme once (a SentencePiece classifier, a
byte-level BPE tagger, a BPE run of tools/train.py; WordPiece everywhere else) and
DeBERTa-v3 (relative attention) with both heads;
`-m slow` every family.
"""

import json
import os
import shutil

import keras
import numpy as np
import pytest

from nlpzoo.zoo import build_encoder, load_pretrained, load_tokenizer
from nlpzoo.zoo.checkpoints import export_hf_checkpoint
from tests.helpers.binaries import run_tools
from tests.helpers.family_fixtures import FAMILIES, TOKENIZERS
from tests.helpers.paths import ROOT

TREC = os.path.join(ROOT, "samples", "trec", "train.label")
CONLL = os.path.join(ROOT, "samples", "conll2003")
HOSTILE = "Café naïve  Zürich\t東京 👍🏽 don't <mask> [MASK]"


def _trec(limit=48):
    with open(TREC, encoding="utf-8") as f:
        rows = [line.split(" ", 1) for line in f][:limit]
    return [text.strip() for _, text in rows], [label.split(":")[0] for label, _ in rows]


def _conll(name):
    sentences, words, tags = [], [], []
    with open(os.path.join(CONLL, name), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                columns = line.split()
                words.append(columns[0])
                tags.append(columns[-1])
            elif words:
                sentences.append((words, tags))
                words, tags = [], []
    if words:
        sentences.append((words, tags))
    return sentences


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """model_type → a Hugging Face directory: a tiny encoder of the family and its tokenizer."""
    directories = {}
    for model_type, (preset, tokenizer_dir) in FAMILIES.items():
        source = os.path.join(TOKENIZERS, tokenizer_dir)
        tokenizer = load_tokenizer(source)
        keras.utils.set_random_seed(0)
        encoder = build_encoder(preset, vocabulary_size=tokenizer.vocabulary_size)
        directory = str(tmp_path_factory.mktemp("families") / model_type)
        export_hf_checkpoint(encoder, directory, model_type=model_type)
        for name in os.listdir(source):
            if name != "reference.json":
                shutil.copy(os.path.join(source, name), directory)
        directories[model_type] = directory
    return directories


def _families(*defaults):
    """Every family as a test parameter, all but `defaults` marked slow."""
    return [pytest.param(name, marks=() if name in defaults else pytest.mark.slow)
            for name in sorted(FAMILIES)]


@pytest.mark.parametrize("model_type", _families("xlm-roberta", "deberta-v2"))
def test_a_classifier_of_each_family_reads_raw_text_with_its_tokenizer(
        model_type, checkpoints, tmp_path):
    directory = checkpoints[model_type]
    texts, labels = _trec()
    model = load_pretrained(directory, "classification", labels=sorted(set(labels)),
                            max_seq_length=48, learning_rate=1e-3)
    tokenizer = model.preprocessor.tokenizer()
    assert tokenizer.kind == load_tokenizer(directory).kind
    assert tokenizer.encode(HOSTILE) == load_tokenizer(directory).encode(HOSTILE)
    history = model.fit(texts, labels, epochs=2, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    before = model.predict(texts[:8], verbose=0)
    path = str(tmp_path / "classifier.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.preprocessor.tokenizer().encode(HOSTILE) == tokenizer.encode(HOSTILE)
    after = loaded.predict(texts[:8], verbose=0)
    assert [p["label"] for p in after] == [p["label"] for p in before]
    np.testing.assert_allclose([p["score"] for p in after], [p["score"] for p in before],
                               atol=1e-5)


@pytest.mark.parametrize("model_type", _families("roberta", "deberta-v2"))
def test_a_crf_tagger_of_each_family_aligns_words_with_its_subwords(
        model_type, checkpoints, tmp_path):
    sentences = _conll("train.txt")
    words, tags = [s[0] for s in sentences], [s[1] for s in sentences]
    model = load_pretrained(checkpoints[model_type], "tagging", head="crf",
                            labels=sorted({tag for row in tags for tag in row}),
                            max_seq_length=64, learning_rate=1e-3)
    model.fit(words, tags, epochs=2, batch_size=4, verbose=0)
    predictions = model.predict(words[:3], verbose=0)
    # One tag per word whatever the scheme splits a word into ("Ġ", "▁", "##").
    assert [len(p["tags"]) for p in predictions] == [len(w) for w in words[:3]]
    path = str(tmp_path / "tagger.keras")
    model.save(path)
    again = keras.saving.load_model(path).predict(words[:3], verbose=0)
    assert [p["tags"] for p in again] == [p["tags"] for p in predictions]


def _train(checkpoints, tmp_path, family, name, *flags):
    """tools/train.py from `family`'s checkpoint into tmp_path/name; checks the run keeps
    the checkpoint's tokenizer (its files, and inside the model)."""
    (result,) = run_tools({name: ("train.py", f"--init_checkpoint={checkpoints[family]}",
                                  "--epochs=1", f"--model_dir={tmp_path / name}",
                                  *flags)}).values()
    assert result.returncode == 0, result.stderr[-2000:]
    run = tmp_path / name
    assert json.loads((run / "metrics.json").read_text())
    assert (run / "tokenizer" / "tokenizer_config.json").exists(), sorted(os.listdir(run))
    model = keras.saving.load_model(str(run / "best_model.keras"))
    assert model.preprocessor.tokenizer().encode(HOSTILE) == load_tokenizer(
        checkpoints[family]).encode(HOSTILE)


def test_train_binary_fine_tunes_a_byte_pair_checkpoint(checkpoints, tmp_path):
    _train(checkpoints, tmp_path, "roberta", "tagger", "--task=tagging", "--head=crf",
           f"--train_data={CONLL}/train.txt", f"--eval_data={CONLL}/dev.txt",
           "--batch_size=8", "--max_seq_length=64")


@pytest.mark.slow
def test_train_binary_fine_tunes_a_sentencepiece_checkpoint(checkpoints, tmp_path):
    _train(checkpoints, tmp_path, "xlm-roberta", "classifier", "--task=classification",
           f"--train_data={TREC}", f"--eval_data={ROOT}/samples/trec/dev.label",
           "--batch_size=16", "--max_seq_length=48")


def test_each_family_checkpoint_takes_its_own_presets_defaults(checkpoints):
    """A checkpoint's fine-tuning defaults come from the preset of its family and shape."""
    from nlpzoo.layers import transformer_of
    from nlpzoo.zoo import load_encoder
    from nlpzoo.zoo.checkpoints import matching_encoder_preset

    found = {model_type: matching_encoder_preset(transformer_of(load_encoder(directory)))
             for model_type, directory in checkpoints.items()}
    assert found == {model_type: preset for model_type, (preset, _) in FAMILIES.items()}


def test_convert_writes_a_byte_pair_checkpoint_to_hugging_face_ours_and_keras_hub(
        checkpoints, tmp_path):
    """And refuses ModernBERT (pre-LN, rotary positions, GeGLU), which no KerasHub
    backbone holds: one line, nothing written."""
    source = checkpoints["roberta"]
    results = run_tools({
        "hf": ("convert.py", f"--input={source}", "--output_format=huggingface",
               f"--output={tmp_path / 'hf'}"),
        "native": ("convert.py", f"--input={source}", "--output_format=native",
                   f"--output={tmp_path / 'native'}"),
        "keras_hub": ("convert.py", f"--input={source}", "--output_format=keras_hub",
                      f"--output={tmp_path / 'keras_hub'}"),
        "modernbert": ("convert.py", f"--input={checkpoints['modernbert']}",
                       "--output_format=keras_hub", f"--output={tmp_path / 'refused'}"),
    })
    for name in ("hf", "native", "keras_hub"):
        assert results[name].returncode == 0, results[name].stderr[-2000:]
    for name in ("hf", "native"):
        assert load_tokenizer(str(tmp_path / name)).encode(HOSTILE) == load_tokenizer(
            source).encode(HOSTILE)
    # KerasHub's RobertaTokenizer cuts "<mask>" out as it is (transformers' lstrips it).
    plain = HOSTILE.replace(" <mask>", "")
    written = json.loads((tmp_path / "keras_hub" / "config.json").read_text())
    assert written["class_name"] == "RobertaBackbone"
    assert load_tokenizer(str(tmp_path / "keras_hub")).encode(plain) == load_tokenizer(
        source).encode(plain)
    refused = results["modernbert"]
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert ("as --output_format=keras_hub: no KerasHub backbone with a byte_pair tokenizer "
            "holds this encoder (RobertaBackbone: global_rope_theta=") in refused.stderr
    assert not (tmp_path / "refused").exists()


@pytest.mark.slow
def test_train_binary_fine_tunes_deberta_with_more_embeddings_than_tokens(tmp_path):
    """microsoft/deberta-v3-*'s layout: 128,100 embedding rows for 128,001 tokens; here
    the fixture's 2,501 tokens beside 2,600 rows."""
    source = os.path.join(TOKENIZERS, FAMILIES["deberta-v2"][1])
    tokenizer = load_tokenizer(source)
    keras.utils.set_random_seed(0)
    encoder = build_encoder("deberta_tiny", vocabulary_size=tokenizer.vocabulary_size + 99)
    export_hf_checkpoint(encoder, str(tmp_path / "deberta"), tokenizer)
    _train({"deberta-v2": str(tmp_path / "deberta")}, tmp_path, "deberta-v2", "classifier",
           "--task=classification", f"--train_data={TREC}",
           f"--eval_data={ROOT}/samples/trec/dev.label", "--batch_size=16",
           "--max_seq_length=48")


def test_modernbert_tiny_classifier_and_tagger_presets_take_a_training_step():
    """The task presets of the tiny ModernBERT build and train on encoder features (the
    local layers see a window shorter than the rows)."""
    from nlpzoo.zoo import build_model

    rng = np.random.default_rng(0)
    ids = rng.integers(5, 60, size=(4, 12)).astype("int32")
    ids[:, 0], ids[2, 7:] = 1, 0
    features = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
                "padding_mask": (ids > 0).astype("int32")}
    # The tagger's words: one per subword between [CLS] and the last token.
    words = dict(features, word_starts=np.tile(np.arange(1, 11), (4, 1)).astype("int32"),
                 word_mask=np.ones((4, 10), "int32"))
    words["word_mask"][2, 6:] = 0
    for preset, x, y in (("modernbert_tiny_classifier", features, np.array([0, 1, 1, 0])),
                         ("modernbert_tiny_tagger", words, (ids[:, 1:11] % 2).astype("int32"))):
        options = {"num_classes": 2} if preset.endswith("classifier") else {"labels": ["O", "X"]}
        model = build_model(preset, vocabulary_size=60, num_layers=2, jit_compile=False,
                            **options)
        before = [np.array(v) for v in model.trainable_weights]
        loss = model.train_on_batch(x, y, return_dict=True)["loss"]
        assert np.isfinite(loss), preset
        after = [np.array(v) for v in model.trainable_weights]
        assert sum(not np.array_equal(a, b) for a, b in zip(before, after)) > len(before) // 2


@pytest.mark.slow  # ~35 s: two fits through the BPE tokenizer
def test_a_modernbert_classifier_and_tagger_take_a_training_step(checkpoints):
    """ModernBERT (rotary, local/global attention, GeGLU) under the task heads: one step
    each lowers nothing to NaN and changes the encoder's weights."""
    texts, labels = _trec(8)
    sentences = _conll("train.txt")[:4]
    for task, x, y, options in (
            ("classification", texts, labels, {"labels": sorted(set(labels))}),
            ("tagging", [s[0] for s in sentences], [s[1] for s in sentences],
             {"labels": sorted({tag for s in sentences for tag in s[1]})})):
        model = load_pretrained(checkpoints["modernbert"], task, max_seq_length=32,
                                learning_rate=1e-3, **options)
        before = [np.array(v) for v in model.encoder.trainable_weights]
        history = model.fit(x, y, epochs=1, batch_size=8, verbose=0)
        assert np.isfinite(history.history["loss"][-1]), task
        after = [np.array(v) for v in model.encoder.trainable_weights]
        assert any(not np.array_equal(a, b) for a, b in zip(before, after)), task
