"""Document context for tagging and span NER (`tasks.words.document_context`), end to end.

The packing (`WordPreprocessor.encode_words` with context) and the choice of
neighbours are checked against brute force; the option against its flag, its
metadata and the default that keeps today's encoding; predictions through
`write_predictions` (what tools/predict.py runs) against the exported
SavedModel, in process on untrained models saved with the option and, for
models trained with `--context_sentences` by tools/train.py (slow), through
tools/predict.py, tools/export.py and a fresh process that loads the
SavedModel.
"""

import itertools
import json
import os

import numpy as np
import pytest
import tensorflow as tf
from absl import flags

from nlpzoo.tasks.words.document_context import (
    add_document_context,
    define_context_flag,
    document_ranges,
    serving_input_names,
)
from nlpzoo.tasks.registry import get_task_class
from nlpzoo.tasks.modeling.serving import SIGNATURE, export_saved_model
from nlpzoo.tasks.span_ner import read_span_file, read_span_jsonl
from nlpzoo.tasks.span_ner.task import SpanNERTask
from nlpzoo.tasks.tagging import TaggedSentence, read_column_file
from nlpzoo.tasks.tagging.task import TaggingTask
from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.text.tokenizer import RESERVED_TOKENS, WordPieceTokenizer
from nlpzoo.tasks.text.word_splitting import split_words
from nlpzoo.tasks.words.preprocessor import WordPreprocessor, split_context_budget
from tests.helpers.binaries import finish_processes, start_python, start_tool
from tests.helpers.paths import CONLL
from nlpzoo.zoo.runs import directory as md
from nlpzoo.zoo import build_model

VOCAB = list(RESERVED_TOKENS) + ["john", "lives", "in", "new", "york", "##s", "##x", "."]
WORDS = ["John", "lives", "in", "New", "Yorks", "yorksx", ".", "zzz", "\u200b", "Johns"]
CLS, SEP = VOCAB.index("[CLS]"), VOCAB.index("[SEP]")


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


# ---------------------------------------------------------------------------------------------
# The packing, against brute force
# ---------------------------------------------------------------------------------------------


_PIECES = {}


def _pieces(tokenizer, word):
    """A word's subwords as the preprocessor takes them ([UNK] for none)."""
    key = (tuple(tokenizer.vocabulary), tokenizer.lowercase, word)
    if key not in _PIECES:
        pieces = tokenizer.tokenize([word]).merge_dims(-2, -1).to_list()[0]
        _PIECES[key] = pieces or [tokenizer.unk_id]
    return _PIECES[key]


def _brute_force_packing(tokenizer, words, left, right, max_seq_length):
    """`(token_ids, word_starts)` by the rules, searching every split of the context."""
    centre, used = [], 0
    for word in words:
        pieces = _pieces(tokenizer, word)
        if used + len(pieces) > max_seq_length - 2:
            break
        centre.append(pieces)
        used += len(pieces)
    budget = max_seq_length - 2 - used if len(centre) == len(words) else 0
    left = [p for word in left for p in _pieces(tokenizer, word)]
    right = [p for word in right for p in _pieces(tokenizer, word)]
    # The most context that fits; then the most even split; then the odd one to the right.
    feasible = [(a, b) for a in range(len(left) + 1) for b in range(len(right) + 1)
                if a + b <= budget]
    a, b = max(feasible, key=lambda ab: (ab[0] + ab[1], -abs(ab[0] - ab[1]), ab[1] - ab[0]))
    tokens = [CLS] + left[len(left) - a:] + [p for w in centre for p in w] + right[:b] + [SEP]
    starts = list(1 + a + np.cumsum([0] + [len(w) for w in centre])[:-1])
    return tokens, [int(s) for s in starts]


def test_split_context_budget_is_the_most_even_split_that_fits():
    cases = list(itertools.product(range(7), range(5), range(5)))
    budget, left, right = (tf.constant(column, tf.int32) for column in zip(*cases))
    left_take, right_take = (t.numpy().tolist() for t in split_context_budget(budget, left,
                                                                               right))
    for (b, l, r), a, c in zip(cases, left_take, right_take):
        feasible = [(x, y) for x in range(l + 1) for y in range(r + 1) if x + y <= b]
        assert (a, c) == max(feasible, key=lambda xy: (sum(xy), -abs(xy[0] - xy[1]),
                                                       xy[1] - xy[0]))


@pytest.mark.parametrize("max_seq_length", [6, 9, 16])
def test_packing_matches_brute_force(max_seq_length):
    """Centre first (cut as without context), context symmetric, trimmed at the far ends."""
    tokenizer = WordPieceTokenizer(VOCAB)
    preprocessor = WordPreprocessor(tokenizer, max_seq_length=max_seq_length)
    rng = np.random.default_rng(max_seq_length)
    rows = [[list(rng.choice(WORDS, n)) for n in rng.integers(0, 9, 3)] for _ in range(60)]
    rows[0] = [["John"], [], []]  # no context on either side
    rows[1] = [[], ["John"], ["lives"]]  # an empty sentence
    words, left, right = (tf.ragged.constant(column, tf.string, ragged_rank=1)
                          for column in zip(*rows))
    features, counts = preprocessor.encode_words(words, left, right)
    alone, alone_counts = preprocessor.encode_words(words)
    assert counts.to_list() == alone_counts.to_list()  # context never displaces a word
    for row, (sentence, before, after) in enumerate(rows):
        tokens, starts = _brute_force_packing(tokenizer, sentence, before, after,
                                              max_seq_length)
        assert features["token_ids"][row].numpy().tolist() == tokens, rows[row]
        assert features["word_starts"][row].numpy().tolist() == starts
        assert features["word_mask"][row].numpy().tolist() == [1] * len(starts)
        assert features["padding_mask"][row].numpy().tolist() == [1] * len(tokens)
        assert features["segment_ids"][row].numpy().tolist() == [0] * len(tokens)
        no_context, _ = _brute_force_packing(tokenizer, sentence, [], [], max_seq_length)
        assert alone["token_ids"][row].numpy().tolist() == no_context
        # Only the centre's words start at a word start; they are the same subwords as alone.
        ids = features["token_ids"][row].numpy()
        assert ids[starts].tolist() == alone["token_ids"][row].numpy()[
            alone["word_starts"][row].numpy()].tolist()


def test_a_sentence_cut_short_gets_no_context():
    preprocessor = WordPreprocessor(WordPieceTokenizer(VOCAB), max_seq_length=6)
    words = tf.ragged.constant([["Yorks", "John", "Yorks"]])  # 2 + 1 + 2 > 4 subwords
    context = tf.ragged.constant([["in", "in", "in"]])
    with_context, _ = preprocessor.encode_words(words, context, context)
    alone, _ = preprocessor.encode_words(words)
    for name in alone:
        assert with_context[name].to_list() == alone[name].to_list()
    assert alone["token_ids"].to_list() == [[CLS, 9, 10, 5, SEP]]  # one free subword, unused


def test_empty_context_is_the_encoding_without_context():
    preprocessor = WordPreprocessor(WordPieceTokenizer(VOCAB), max_seq_length=16)
    words = tf.ragged.constant([["John", "lives"], ["in", "Yorks", "."]])
    empty = tf.ragged.constant([[], []], tf.string, ragged_rank=1)
    with_context, _ = preprocessor.encode_words(words, empty, empty)
    alone, _ = preprocessor.encode_words(words)
    for name in alone:
        assert with_context[name].to_list() == alone[name].to_list()


def test_raw_strings_and_word_lists_encode_the_same():
    """The exported model's strings give the tf.data pipeline's features."""
    from nlpzoo.tasks.tagging.pipeline import make_dataset

    rng = np.random.default_rng(3)
    sentences = [TaggedSentence(tuple(rng.choice(WORDS[:7], n)), ("O",) * n, "f.txt", line)
                 for line, n in enumerate(rng.integers(1, 9, 7))]
    sentences = add_document_context(sentences, 2)
    preprocessor = WordPreprocessor(WordPieceTokenizer(VOCAB), max_seq_length=16)
    [(batch, _)] = list(make_dataset(sentences, preprocessor, ["O"], batch_size=8))
    served = preprocessor(tf.constant([" ".join(s.words) for s in sentences]),
                          tf.constant([" ".join(s.left_context) for s in sentences]),
                          tf.constant([" ".join(s.right_context) for s in sentences]))
    assert any(s.left_context for s in sentences)
    for name, value in batch.items():
        np.testing.assert_array_equal(served[name].numpy(), value.numpy(), err_msg=name)


def test_label_all_subwords_labels_centre_subwords_only():
    from nlpzoo.tasks.tagging.pipeline import make_dataset

    sentences = add_document_context([
        TaggedSentence(("Yorks",), ("B-LOC",), "f.txt", 1),
        TaggedSentence(("Yorks", "lives"), ("B-LOC", "O"), "f.txt", 3)], 1)
    [(features, labels)] = list(make_dataset(
        sentences, WordPieceTokenizer(VOCAB), ["O", "B-LOC", "I-LOC"], max_seq_length=16,
        training=True, label_all_subwords=True, batch_size=4))
    rows = {}
    for token_ids, starts, tags in zip(features["token_ids"].numpy().tolist(),
                                       features["word_starts"].numpy().tolist(),
                                       labels.numpy().tolist()):
        count = sum(tag >= 0 for tag in tags)
        rows[count] = ([VOCAB[i] for i in token_ids[:7]], starts[:count], tags[:count])
    packed = ["[CLS]", "york", "##s", "york", "##s", "lives", "[SEP]"]
    assert rows[2] == (packed, [1, 2], [1, 2])  # "Yorks" | right context "Yorks lives"
    assert rows[3] == (packed, [3, 4, 5], [1, 2, 0])  # left context "Yorks" | "Yorks lives"


# ---------------------------------------------------------------------------------------------
# Neighbours and documents
# ---------------------------------------------------------------------------------------------


def test_neighbours_match_brute_force():
    rng = np.random.default_rng(0)
    keys = [(f"f{rng.integers(2)}.txt", int(rng.integers(2))) for _ in range(40)]
    sentences = [TaggedSentence((f"w{i}", f"x{i}"), ("O", "O"), source, i, document)
                 for i, (source, document) in enumerate(keys)]
    for count in range(4):
        result = add_document_context(sentences, count)
        for i, sentence in enumerate(result):
            before, j = [], i - 1
            while j >= 0 and keys[j] == keys[i] and i - j <= count:
                before.insert(0, j)
                j -= 1
            after, j = [], i + 1
            while j < len(keys) and keys[j] == keys[i] and j - i <= count:
                after.append(j)
                j += 1
            assert sentence.left_context == tuple(w for k in before for w in sentences[k].words)
            assert sentence.right_context == tuple(w for k in after for w in sentences[k].words)
            assert (sentence.words, sentence.tags, sentence.line) == (
                sentences[i].words, sentences[i].tags, sentences[i].line)
    runs = document_ranges(sentences)
    assert [keys[start] for start, _ in runs] == [k for k, _ in itertools.groupby(keys)]


def test_docstart_lines_number_the_documents(tmp_path):
    path = _write(tmp_path / "docs.conll", "-DOCSTART- O\n\na O\n\nb O\n-DOCSTART- O\n"
                  "\n-DOCSTART- O\nc O\n\n\nd O\n-DOCSTART- O\n")
    sentences = read_column_file(path)
    assert [(s.words, s.document) for s in sentences] == [
        (("a",), 0), (("b",), 0), (("c",), 1), (("d",), 1)]
    assert [s.document for s in read_span_file(path)] == [0, 0, 1, 1]
    task = TaggingTask(context_sentences=3)
    assert [(s.left_context, s.right_context) for s in task.read(path)] == [
        ((), ("b",)), (("a",), ()), ((), ("d",)), (("c",), ())]


def test_jsonl_document_key(tmp_path):
    records = [{"tokens": ["a"], "spans": [], "document": "x"},
               {"tokens": ["b"], "spans": [], "document": "x"},
               {"tokens": ["c"], "spans": [], "document": 7},
               {"tokens": ["d"], "spans": []}]
    path = _write(tmp_path / "docs.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    assert [s.document for s in read_span_jsonl(path)] == [0, 0, 1, 2]
    task = SpanNERTask(context_sentences=1)
    assert [s.right_context for s in task.read(path)] == [("b",), (), (), ()]
    assert [s.left_context for s in task.read_prediction_input(path)] == [(), ("a",), (), ()]
    bad = _write(tmp_path / "bad.jsonl", json.dumps({**records[0], "document": [1]}) + "\n")
    with pytest.raises(DataFormatError, match=f"{bad}:1: 'document' must be"):
        read_span_jsonl(bad)


def test_prediction_input_gives_each_sentence_its_neighbours(tmp_path):
    text = _write(tmp_path / "in.txt", "EU rejects\n\nGerman call\nto boycott lamb\n")
    columns = _write(tmp_path / "in.conll", "a O\n\nb O\n-DOCSTART- O\nc O\n")
    for task_class in (TaggingTask, SpanNERTask):
        task = task_class(context_sentences=1)
        from_text = task.read_prediction_input(text)
        assert [(s.left_context, s.words, s.right_context) for s in from_text] == [
            ((), ("EU", "rejects"), ("German", "call")),
            (("EU", "rejects"), ("German", "call"), ("to", "boycott", "lamb")),
            (("German", "call"), ("to", "boycott", "lamb"), ())]
        from_columns = task.read_prediction_input(columns)
        assert [(s.left_context, s.right_context) for s in from_columns] == [
            ((), ("b",)), (("a",), ()), ((), ())]
        alone = task_class().read_prediction_input(text)
        assert all(not s.left_context and not s.right_context for s in alone)


# ---------------------------------------------------------------------------------------------
# The option: flag, metadata, default
# ---------------------------------------------------------------------------------------------


def test_flag_is_defined_once_and_read_by_both_tasks():
    values = flags.FlagValues()
    for task_class in (TaggingTask, SpanNERTask):
        task_class.define_flags(values)
    define_context_flag(values)
    values(["train", "--context_sentences=2"])
    for task_class in (TaggingTask, SpanNERTask):
        options, _ = task_class.options_from_flags(values)
        assert options["context_sentences"] == 2
        assert task_class(**options).serving_inputs() == ("text", "left_context",
                                                          "right_context")
    with pytest.raises(flags.IllegalFlagValueError):
        values(["train", "--context_sentences=-1"])


@pytest.mark.parametrize("name", ["tagging", "span_ner"])
def test_option_default_metadata_and_validation(name):
    task_class = get_task_class(name)
    assert task_class().options.context_sentences == 0
    assert task_class().serving_inputs() == ("text",) == serving_input_names(0)
    # Models saved before the option existed load with it off.
    old = {"task": name, "task_options": {k: v for k, v in task_class().options_dict().items()
                                          if k != "context_sentences"}}
    assert task_class.from_metadata(old).options.context_sentences == 0
    task = task_class(context_sentences=2)
    restored = task_class.from_metadata({"task": name, "task_options": task.options_dict()})
    assert restored.options.context_sentences == 2 and restored.options == task.options
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="context_sentences"):
            task_class(context_sentences=bad)


def test_context_off_keeps_todays_features(tmp_path):
    """context_sentences=0: the sentence alone, as before; one-sentence documents too."""
    path = _write(tmp_path / "docs.conll", "-DOCSTART- O\n\nJohn B-PER\nlives O\n\n"
                  "-DOCSTART- O\n\nNew B-LOC\nYorks I-LOC\n.\tO\n")
    labels = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    tokenizer = WordPieceTokenizer(VOCAB)
    preprocessor = WordPreprocessor(tokenizer, max_seq_length=16)
    batches = {}
    for count in (0, 2):
        task = TaggingTask(context_sentences=count)
        [(features, _)] = list(task.make_dataset(task.read(path), preprocessor, labels))
        batches[count] = {name: value.numpy() for name, value in features.items()}
    for row, words in enumerate([["John", "lives"], ["New", "Yorks", "."]]):
        tokens, starts = _brute_force_packing(tokenizer, words, [], [], 16)
        assert batches[0]["token_ids"][row][:len(tokens)].tolist() == tokens
        assert batches[0]["word_starts"][row][:len(starts)].tolist() == starts
    for name in batches[0]:  # no neighbour in the same document: nothing changes
        np.testing.assert_array_equal(batches[2][name], batches[0][name])


# ---------------------------------------------------------------------------------------------
# predict (write_predictions) and the serving graph agree, in process
# ---------------------------------------------------------------------------------------------

SENTENCES = ["John lives in New Yorks .", "John", "in New York lives John .",
             "yorksx zzz John lives", ". . John", "New Yorks lives in John ."]


def _tiny_model(name, labels):
    common = dict(vocabulary_size=len(VOCAB), num_layers=1, hidden_dim=16, num_heads=2,
                  intermediate_dim=32, compile=False)
    if name == "tagging":
        return build_model("bert_tiny_crf_tagger", labels=labels, tag_scheme="IOB2", **common)
    return build_model("bert_tiny_span_ner", num_classes=len(labels), max_span_width=2,
                       span_hidden_dim=8, width_embedding_dim=4, **common)


def _context_strings(lines, count):
    left = [" ".join(lines[max(0, i - count):i]) for i in range(len(lines))]
    right = [" ".join(lines[i + 1:i + 1 + count]) for i in range(len(lines))]
    return left, right


# span_ner is slow (`make test-slow`): the context packing it checks is the tagger's.
@pytest.mark.parametrize("name", ["tagging", pytest.param("span_ner", marks=pytest.mark.slow)])
def test_saved_model_with_context_predicts_as_write_predictions(name, tmp_path):
    """A `.keras` file with the option → `write_predictions` (what tools/predict.py runs)
    and the exported SavedModel (what tools/export.py writes) give the same predictions."""
    labels = ["O", "B-PER", "I-PER"] if name == "tagging" else ["NONE", "PER"]
    options = {"threshold": 0.3, "max_span_width": 2} if name == "span_ner" else {}
    task = get_task_class(name)(context_sentences=1, **options)
    model = _tiny_model(name, labels)  # untrained: random tags, many entities
    model.attach_metadata(preprocessor=task.make_preprocessor(VOCAB, max_seq_length=12),
                          task=name, labels=labels, task_options=task.options_dict())
    model.save(str(tmp_path / "model.keras"))
    trained = md.load_trained(model_path=str(tmp_path / "model.keras"))
    assert trained.task.options.context_sentences == 1 and trained.task.options == task.options

    path = _write(tmp_path / "in.txt", "".join(line + "\n" for line in SENTENCES))
    output = str(tmp_path / "out.jsonl")
    trained.task.write_predictions(trained.model, trained.preprocessor,
                                   trained.task.read_prediction_input(path), labels, output)
    predicted = [json.loads(line) for line in open(output)]
    export_saved_model(trained.task, trained.model, trained.preprocessor, labels,
                       str(tmp_path / "exported"))
    serve = tf.saved_model.load(str(tmp_path / "exported")).signatures[SIGNATURE]
    left, right = _context_strings(SENTENCES, 1)
    served = {k: v.numpy().tolist() for k, v in serve(
        text=tf.constant(SENTENCES), left_context=tf.constant(left),
        right_context=tf.constant(right)).items()}
    for row, record in enumerate(predicted):
        count = served["num_entities"][row]
        entities = list(zip(served["entity_start"][row], served["entity_end"][row],
                            [label.decode() for label in served["entity_label"][row]]))[:count]
        assert entities == [(e["start"], e["end"], e["label"]) for e in record["entities"]]
        if name == "tagging":
            words = len(record["words"])
            assert [t.decode() for t in served["tags"][row][:words]] == record["tags"]
        else:
            np.testing.assert_allclose(served["entity_score"][row][:count],
                                       [e["score"] for e in record["entities"]], atol=1e-5)
    if name == "span_ner":  # the context is used: without it, other scores
        empty = tf.constant([""] * len(SENTENCES))
        alone = serve(text=tf.constant(SENTENCES), left_context=empty, right_context=empty)
        assert alone["entity_score"].numpy().tolist() != served["entity_score"]


# ---------------------------------------------------------------------------------------------
# Trained with --context_sentences: tools/predict.py and the exported SavedModel agree
# (slow: two trainings and five more processes, about two minutes on two cores)
# ---------------------------------------------------------------------------------------------

# A fresh process that knows nothing of this project: TensorFlow and tensorflow-text only.
_SERVE_SNIPPET = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops the graph uses)

results = {}
for path, inputs in json.load(open(sys.argv[1])).items():
    serve = tf.saved_model.load(path).signatures["serving_default"]
    outputs = serve(**{name: tf.constant(values) for name, values in inputs.items()})
    results[path] = {name: tf.nest.map_structure(
        lambda v: v.decode() if isinstance(v, bytes) else v, value.numpy().tolist())
        for name, value in outputs.items()}
json.dump(results, open(sys.argv[2], "w"))
"""

_CONTEXT = {"tagging": 1, "span_ner": 2}


def _with_documents(source, destination, every):
    """The CoNLL sample with a -DOCSTART- line before every `every` sentences."""
    blocks = [block for block in open(source, encoding="utf-8").read().split("\n\n") if block]
    parts = [("-DOCSTART- -X- -X- O\n\n" if i % every == 0 else "") + block.strip("\n") + "\n\n"
             for i, block in enumerate(blocks)]
    return _write(destination, "".join(parts))


@pytest.fixture(scope="module")
def context_runs(tmp_path_factory):
    """Taggers and span NER models trained with context, then predict.py, export.py, serve."""
    base = tmp_path_factory.mktemp("context")
    train = _with_documents(os.path.join(CONLL, "train.txt"), base / "train.conll", 5)
    dev = _with_documents(os.path.join(CONLL, "dev.txt"), base / "dev.conll", 3)
    common = ("--train_data", train, "--eval_data", dev, "--epochs=1", "--batch_size=8",
              "--vocab_size=300", "--learning_rate=1e-3", "--max_seq_length=32",
              "--mixed_precision=float32")
    task_flags = {"tagging": ("--task=tagging", "--head=crf"),
                  "span_ner": ("--task=span_ner", "--max_span_width=3")}
    dirs = {name: str(base / name) for name in task_flags}
    results = finish_processes({
        f"train {name}": start_tool("train.py", *flags, *common, "--model_dir", dirs[name],
                                    f"--context_sentences={_CONTEXT[name]}")
        for name, flags in task_flags.items()})
    _check(results)
    lines = [" ".join(s.words) for s in read_column_file(dev)][:8]
    text = _write(base / "sentences.txt", "".join(line + "\n" for line in lines))
    exports = {name: str(base / f"exported_{name}") for name in dirs}
    predictions = {name: str(base / f"{name}.jsonl") for name in dirs}
    processes = {f"export {name}": start_tool("export.py", "--model_dir", dirs[name],
                                              "--output", exports[name]) for name in dirs}
    processes.update({f"predict {name}": start_tool(
        "predict.py", "--model", md.path(dirs[name], md.BEST_MODEL), "--input", text,
        "--output", predictions[name]) for name in dirs})
    _check(finish_processes(processes))
    request, report = str(base / "request.json"), str(base / "served.json")
    serve_inputs = {}
    for name in dirs:
        left, right = _context_strings(lines, _CONTEXT[name])
        serve_inputs[exports[name]] = {"text": lines, "left_context": left,
                                       "right_context": right}
    with open(request, "w") as f:
        json.dump(serve_inputs, f)
    _check(finish_processes({"serve": start_python("-c", _SERVE_SNIPPET, request, report)}))
    with open(report) as f:
        served = json.load(f)
    return {"dirs": dirs, "lines": lines,
            "served": {name: served[exports[name]] for name in dirs},
            "predicted": {name: [json.loads(line) for line in open(predictions[name])]
                          for name in dirs}}


def _check(results):
    for name, result in results.items():
        assert result.returncode == 0, f"{name}: {result.stderr[-3000:]}"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tagging", "span_ner"])
def test_trained_model_keeps_the_option(context_runs, name):
    model_dir = context_runs["dirs"][name]
    config = md.read_json(md.path(model_dir, md.CONFIG))
    assert config["task_options"]["context_sentences"] == _CONTEXT[name]
    trained = md.load_trained(model_path=md.path(model_dir, md.BEST_MODEL))
    assert trained.model.task_metadata["task_options"]["context_sentences"] == _CONTEXT[name]
    assert trained.task.options.context_sentences == _CONTEXT[name]
    assert trained.task.serving_inputs() == ("text", "left_context", "right_context")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tagging", "span_ner"])
def test_trained_model_predicts_and_serves_alike(context_runs, name):
    served, predicted = context_runs["served"][name], context_runs["predicted"][name]
    lines = context_runs["lines"]
    assert len(predicted) == len(lines)
    for row, record in enumerate(predicted):
        count = served["num_words"][row]
        # Plain text splits as BERT does, in predict.py and the graph ("1996-08-30": 5 words).
        words = [word for word, _, _ in split_words(lines[row])]
        assert served["words"][row][:count] == record["words"] == words
        entities = list(zip(served["entity_start"][row], served["entity_end"][row],
                            served["entity_label"][row]))[:served["num_entities"][row]]
        assert [list(e) for e in entities] == [
            [e["start"], e["end"], e["label"]] for e in record["entities"]]
        if name == "tagging":
            assert served["tags"][row][:count] == record["tags"]
        else:
            np.testing.assert_allclose(
                served["entity_score"][row][:served["num_entities"][row]],
                [e["score"] for e in record["entities"]], atol=1e-5)
