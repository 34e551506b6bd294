#!/bin/sh
# The GPU check, one command for the day a GPU is lent (docs/performance.md#the-gpu-check):
#
#   benchmarks/gpu_check.sh [--out=gpu_check.json]   # on a machine with an NVIDIA GPU
#   benchmarks/gpu_check.sh --dry_run                 # anywhere: every step, shrunk, on CPU
#
# 1. installs what it needs: the project's .venv (make install), and TensorFlow's CUDA
#    libraries (`tensorflow[and-cuda]` at the installed TensorFlow's version) when a GPU is
#    there and TensorFlow does not see it yet;
# 2. runs the task-model tests on the GPU: each task model trains under XLA and proves it
#    compiled (tests.helpers.task_checks), trains under mixed precision with float32 logits,
#    and round-trips through a .keras file; the layer tests do the same for every layer;
# 3. tools/benchmark.py --what=encoder_speed --preset=bert_base against KerasHub, with XLA
#    on and off and with mixed_bfloat16 and float32 (four runs: MFU, tokens/s, the ratio);
# 4. one CoNLL-2003 fine-tuning epoch from all-MiniLM-L6-v2 (tools/benchmark.py
#    --what=finetune --rounds=1), ours against KerasHub;
# 5. benchmarks/gpu_check_keras.py: our encoder on the GPU against the CPU, padding, mixed
#    precision's float32 logits, and its speed against KerasHub's in Keras's own `fit`;
# 6. writes one JSON record (--out): the GPU, the versions, each step's exit status and
#    figures. It exits non-zero when a step failed (the record says which).
#
# Where TensorFlow cannot be had (the GPU machines lent here hold JAX with CUDA, no TensorFlow,
# and reach no package index), --backend=auto runs benchmarks/gpu_check_keras.py alone under
# Keras's JAX backend with the system's python3 (keras and keras_hub importable there): our
# layers on the GPU, timed against KerasHub's, and its record is the check's. --backend=jax
# asks for that path, --backend=tensorflow for the one above.
#
# --dry_run makes no install and needs no GPU: the same steps on CPU, each shrunk to seconds
# (bert_tiny instead of bert_base, one timed window of one step, 64 CoNLL sentences from
# samples/ when ../shared/data is absent, the test selection collected and one task's tests
# run), so that the script is known to work before a GPU is ever lent.
set -u
cd "$(dirname "$0")/.."

DRY_RUN=0
OUT=gpu_check.json
BACKEND=auto
for argument in "$@"; do
    case "$argument" in
        --dry_run) DRY_RUN=1 ;;
        --out=*) OUT="${argument#--out=}" ;;
        --backend=auto|--backend=jax|--backend=tensorflow) BACKEND="${argument#--backend=}" ;;
        *) echo "error: unknown argument $argument (usage: $0 [--dry_run] [--out=FILE]" \
                "[--backend=auto|jax|tensorflow])" >&2
           exit 2 ;;
    esac
done

PY=.venv/bin/python
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")
export TF_CPP_MIN_LOG_LEVEL=3

if [ "$DRY_RUN" = 0 ]; then
    if ! nvidia-smi >/dev/null 2>&1; then
        echo "error: no NVIDIA GPU here (nvidia-smi failed); run with --dry_run to check the script on CPU" >&2
        exit 1
    fi
    if [ "$BACKEND" = auto ] && [ ! -x "$PY" ] && ! python3 -c "import tensorflow" 2>/dev/null \
            && python3 -c "import jax, sys; sys.exit(not jax.devices('gpu'))" 2>/dev/null; then
        BACKEND=jax
    fi
    if [ "$BACKEND" = jax ]; then
        echo "== no TensorFlow here and JAX sees the GPU: our layers under Keras's JAX backend" >&2
        KERAS_BACKEND=jax exec python3 benchmarks/gpu_check_keras.py --out="$OUT"
    fi
    make install || { echo "error: make install failed" >&2; exit 1; }
    if ! $PY -c "import tensorflow as tf, sys; sys.exit(not tf.config.list_physical_devices('GPU'))" 2>/dev/null; then
        version=$($PY -c "import tensorflow as tf; print(tf.__version__)")
        $PY -m pip install --quiet "tensorflow[and-cuda]==$version" || {
            echo "error: cannot install tensorflow[and-cuda]==$version" >&2; exit 1; }
    fi
elif [ ! -x "$PY" ]; then
    echo "error: $PY is missing: make install first (a dry run installs nothing)" >&2
    exit 1
fi

# The test files that check task models (run_task_test) and every layer.
TASK_TESTS="tests/tasks/classification/test_classification_model.py
tests/tasks/tagging/test_tagging_model.py tests/tasks/span_ner/test_span_ner_model.py
tests/tasks/bi_encoder/test_bi_encoder_model.py tests/tasks/question_answering/test_qa_model.py
tests/tasks/words/test_word_shapes.py tests/layers"
DATA=../shared/data/conll2003
if [ "$DRY_RUN" = 1 ]; then
    PRESET=bert_tiny; SPEED="--windows=1 --steps=1 --sequence_length=32 --batch_size=4 --matmul_size=256"
    FINETUNE="--train_sentences=64 --predict_sentences=32 --batch_size=16"
    [ -d "$DATA" ] || FINETUNE="$FINETUNE --train_data=samples/conll2003/train.txt --predict_data=samples/conll2003/dev.txt"
else
    PRESET=bert_base; SPEED=""; FINETUNE=""
fi

step() {  # step NAME COMMAND...: runs it, its output in $LOGS/NAME.log, its status in .rc
    name=$1; shift
    echo "== $name: $*" >&2
    "$@" >"$LOGS/$name.log" 2>&1
    echo $? >"$LOGS/$name.rc"
    tail -n 3 "$LOGS/$name.log" >&2
}

# shellcheck disable=SC2086  # the lists split into arguments on purpose
if [ "$DRY_RUN" = 1 ]; then
    step task_tests_collected $PY -m pytest -q -p no:cacheprovider --collect-only -m "" $TASK_TESTS
    step task_tests $PY -m pytest -q -p no:cacheprovider -m "not slow" \
        tests/tasks/classification/test_classification_model.py
else
    step task_tests $PY -m pytest -q -p no:cacheprovider -m "" $TASK_TESTS
fi
for jit in true false; do
    for precision in mixed_bfloat16 float32; do
        # shellcheck disable=SC2086
        step "encoder_speed_jit_${jit}_${precision}" $PY tools/benchmark.py --what=encoder_speed \
            --preset=$PRESET --jit_compile=$jit --mixed_precision=$precision $SPEED
    done
done
# shellcheck disable=SC2086
step finetune $PY tools/benchmark.py --what=finetune --rounds=1 $FINETUNE
KERAS_DRY=""; [ "$DRY_RUN" = 1 ] && KERAS_DRY="--dry_run"
# shellcheck disable=SC2086
step keras_encoder $PY benchmarks/gpu_check_keras.py --out="$LOGS/keras_encoder.json" $KERAS_DRY

$PY - "$LOGS" "$OUT" "$DRY_RUN" <<'PYTHON'
"""Gathers the steps' statuses and last JSON lines into one record."""
import datetime, glob, json, os, sys

logs, out, dry_run = sys.argv[1], sys.argv[2], sys.argv[3] == "1"


def last_json(text):
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                pass
    return None


import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

sys.path.insert(0, "benchmarks")
from gpu_check_keras import gpu_name  # noqa: E402  (nvidia-smi's line, or None)

steps = {}
for rc_file in sorted(glob.glob(os.path.join(logs, "*.rc"))):
    name = os.path.basename(rc_file)[:-3]
    text = open(os.path.join(logs, name + ".log"), errors="replace").read()
    step = {"exit_status": int(open(rc_file).read())}
    figures = last_json(text)
    if figures is not None:
        step["result"] = figures
    else:
        step["last_line"] = text.strip().splitlines()[-1] if text.strip() else ""
    steps[name] = step
record = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
          "dry_run": dry_run, "gpu": gpu_name(),
          "tensorflow_gpus": [d.name for d in tf.config.list_physical_devices("GPU")],
          "tensorflow": tf.__version__, "keras": keras.__version__, "steps": steps,
          "passed": all(step["exit_status"] == 0 for step in steps.values())}
with open(out, "w") as f:
    json.dump(record, f, indent=1)
    f.write("\n")
print(json.dumps({"passed": record["passed"], "record": out,
                  "failed": [name for name, step in steps.items() if step["exit_status"]]}))
sys.exit(0 if record["passed"] else 1)
PYTHON
