"""Runs a trained model directory on new text and writes its predictions.

    python tools/predict.py --model_dir=runs/conll --input=sentences.txt --output=tags.conll
    python tools/predict.py --model_dir=runs/conll --input=eng.testb --output=entities.jsonl
    python tools/predict.py --model=runs/conll/best_model.keras --input=eng.testb --output=e.jsonl

Tagging and span NER: the input is tokenized text, one sentence per line with words separated
by spaces, or a CoNLL/column file (its tags are ignored). The output is CoNLL
(`word tag` lines, a blank line between sentences) or, for a `.jsonl` output,
one JSON object per sentence with its words, tags and entities (word offsets,
`end` inclusive; span NER adds each entity's score, and nested decoding needs
JSONL). Span NER also reads its JSONL span format as input. Classification: the input is one text per line or a data
file of the model's format; the output is JSONL with the label and the class
probabilities.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
from absl import flags  # noqa: E402

from tasks.classification import ClassificationExample  # noqa: E402
from tasks.errors import DataFormatError  # noqa: E402
from tasks.registry import get_task  # noqa: E402
from tasks.span_ner import SpanSentence  # noqa: E402
from tasks.span_ner.evaluation import decode_all, span_probabilities  # noqa: E402
from tasks.tagging import TaggedSentence, spans_to_tags, tags_to_spans  # noqa: E402
from tasks.tagging.evaluation import predict_tags  # noqa: E402
from tools import model_directory as md  # noqa: E402
from tools.errors import UserError, run  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "A model directory written by tools/train.py.")
flags.DEFINE_string("model", None, "Instead of --model_dir: a .keras file written by "
                    "tools/train.py (it carries its vocabulary, labels and task options).")
flags.DEFINE_string("input", None, "Input file.")
flags.DEFINE_string("output", None, "Output file (written atomically).")
flags.DEFINE_enum("input_format", "auto", ("auto", "text", "data"),
                  "text: one sentence per line; data: a file in the task's data format "
                  "(CoNLL columns, TREC, MRPC, JSONL); auto: data when it parses as such.")
flags.DEFINE_enum("output_format", "auto", ("auto", "conll", "jsonl"),
                  "Tagging output; auto: jsonl for a .jsonl file, CoNLL otherwise.")
flags.DEFINE_integer("batch_size", 64, "Sentences per batch.", lower_bound=1)
flags.mark_flags_as_required(["input", "output"])
flags.mark_flags_as_mutual_exclusive(["model_dir", "model"], required=True)


def _text_lines(path):
    if not os.path.isfile(path):
        raise UserError(f"{path}: no such file")
    with open(path, encoding="utf-8", errors="replace") as f:
        return [(number, line.strip()) for number, line in enumerate(f, 1) if line.strip()]


def _looks_like_columns(path):
    lines = [line for _, line in _text_lines(path)[:50]]
    return bool(lines) and all(len(line.split()) >= 2 for line in lines) and \
        len({len(line.split()) for line in lines}) == 1


def _read_tagging_input(task, path):
    use_data = FLAGS.input_format == "data" or (
        FLAGS.input_format == "auto" and _looks_like_columns(path))
    if use_data:
        sentences = task.read(path)
        return [TaggedSentence(s.words, ("O",) * len(s.words), s.source, s.line)
                for s in sentences]
    sentences = [TaggedSentence(tuple(line.split()), ("O",) * len(line.split()), path, number)
                 for number, line in _text_lines(path)]
    if not sentences:
        raise UserError(f"{path}: no sentences found")
    return sentences


def predict_span_ner(model, tokenizer, labels, config, task):
    if FLAGS.input_format != "text" and FLAGS.input.endswith((".jsonl", ".json")):
        read = task.read(FLAGS.input)  # the span JSONL format; its spans are ignored
    else:  # plain text or a column file, read as for tagging
        read = _read_tagging_input(get_task("tagging"), FLAGS.input)
    sentences = [SpanSentence(s.words, (), s.source, s.line) for s in read]
    dataset = task.make_dataset(sentences, tokenizer, labels, training=False,
                                max_seq_length=config["max_seq_length"],
                                batch_size=FLAGS.batch_size)
    probabilities = span_probabilities(model, dataset, sentences, task.max_span_width)
    entities = decode_all(probabilities, labels, task.threshold, task.decoding, task.flat_method)
    as_jsonl = FLAGS.output_format == "jsonl" or (
        FLAGS.output_format == "auto" and FLAGS.output.endswith(".jsonl"))
    if not as_jsonl and task.decoding == "nested":
        raise UserError("nested entities cannot be written as CoNLL tags; use a .jsonl output")
    lines = []
    for sentence, found in zip(sentences, entities):
        if as_jsonl:
            lines.append(json.dumps({"words": list(sentence.words), "entities": [
                {"start": int(start), "end": int(end), "label": label,
                 "score": round(float(score), 6),
                 "text": " ".join(sentence.words[start:end + 1])}
                for start, end, label, score in found]}, ensure_ascii=False) + "\n")
        else:
            tags = spans_to_tags([(s, e, l) for s, e, l, _ in found], len(sentence.words))
            lines.append("".join(f"{w} {t}\n" for w, t in zip(sentence.words, tags)) + "\n")
    _write_atomically(FLAGS.output, lines)
    return len(sentences)


def _read_classification_input(task, path, data_format):
    if FLAGS.input_format != "text":
        try:
            return task.read(path, data_format)
        except DataFormatError:
            if FLAGS.input_format == "data":
                raise
    examples = [ClassificationExample(text=line, label="", source=path, line=number)
                for number, line in _text_lines(path)]
    if not examples:
        raise UserError(f"{path}: no texts found")
    return examples


def _write_atomically(path, lines):
    temporary = f"{path}.partial"
    with open(temporary, "w", encoding="utf-8") as f:
        f.writelines(lines)
    os.replace(temporary, path)


def _tagging_lines(sentences, predictions, as_jsonl):
    for sentence, tags in zip(sentences, predictions):
        if as_jsonl:
            entities = [{"start": start, "end": end, "label": label,
                         "text": " ".join(sentence.words[start:end + 1])}
                        for start, end, label in tags_to_spans(tags)]
            yield json.dumps({"words": list(sentence.words), "tags": tags,
                              "entities": entities}, ensure_ascii=False) + "\n"
        else:
            yield "".join(f"{word} {tag}\n" for word, tag in zip(sentence.words, tags)) + "\n"


def predict_tagging(model, tokenizer, labels, config, task):
    sentences = _read_tagging_input(task, FLAGS.input)
    dataset = task.make_dataset(sentences, tokenizer, labels, training=False,
                                max_seq_length=config["max_seq_length"],
                                batch_size=FLAGS.batch_size)
    predictions = predict_tags(model, dataset, sentences, labels)
    as_jsonl = FLAGS.output_format == "jsonl" or (
        FLAGS.output_format == "auto" and FLAGS.output.endswith(".jsonl"))
    _write_atomically(FLAGS.output, _tagging_lines(sentences, predictions, as_jsonl))
    return len(sentences)


def predict_classification(model, tokenizer, labels, config, task):
    examples = _read_classification_input(task, FLAGS.input, config.get("data_format"))
    # Labels of the input (if any) are not used: tag every example with a known one.
    unlabeled = [ClassificationExample(e.text, labels[0], e.text_pair, e.source, e.line)
                 for e in examples]
    dataset = task.make_dataset(unlabeled, tokenizer, labels, training=False,
                                max_seq_length=config["max_seq_length"],
                                batch_size=FLAGS.batch_size)
    logits = model.predict(dataset, verbose=0)
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    lines = []
    for example, row in zip(examples, probabilities):
        record = {"text": example.text, "label": labels[int(row.argmax())],
                  "probabilities": {label: round(float(p), 6) for label, p in zip(labels, row)}}
        if example.text_pair is not None:
            record["text_pair"] = example.text_pair
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    _write_atomically(FLAGS.output, lines)
    return len(examples)


def main(argv):
    model, tokenizer, labels, config = md.load_trained(FLAGS.model_dir, FLAGS.model)
    task = get_task(config["task"], **config.get("task_options", {}))
    predict = {"tagging": predict_tagging, "span_ner": predict_span_ner}.get(
        task.name, predict_classification)
    count = predict(model, tokenizer, labels, config, task)
    print(f"wrote predictions for {count} "
          f"{'texts' if task.name == 'classification' else 'sentences'} to {FLAGS.output}")


def entry_point():
    run(main)


if __name__ == "__main__":
    entry_point()
