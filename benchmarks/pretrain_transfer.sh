#!/usr/bin/env bash
# Pretraining → TREC transfer (issue 5's measured result).
#
# Pretrains bert_mini on WikiText-2 (valid + test text, ../shared/data) with each
# objective for the same number of steps, then fine-tunes each encoder, and a
# randomly initialised one, on TREC-6 with the same vocabulary, steps and
# learning rate; the best epoch is chosen on 500 questions held out of the
# training file and the chosen model is evaluated on TREC_10 (500 questions).
#
#   benchmarks/pretrain_transfer.sh OUT_DIR [PRETRAIN_STEPS] [FINETUNE_EPOCHS]
#
# Prints one line per run; everything else goes to OUT_DIR/*.log. Each step is
# skipped when its result exists, so an interrupted run continues, and the
# pretraining or fine-tuning runs can be started in parallel by hand with the
# same commands (the figures in docs/results.md were made that way on 2 cores).
# LOW_RESOURCE=N also fine-tunes on only the first N training questions
# (10 epochs), where pretraining should matter more.
set -euo pipefail
OUT=${1:?usage: $0 OUT_DIR [PRETRAIN_STEPS] [FINETUNE_EPOCHS]}
STEPS=${2:-1200}
EPOCHS=${3:-5}
LEARNING_RATES=${LEARNING_RATES:-"1e-4 5e-4"}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA=${DATA:-$ROOT/../shared/data}
PY=${PY:-$ROOT/.venv/bin/python}
export TF_CPP_MIN_LOG_LEVEL=3
mkdir -p "$OUT"

# TREC: the last 500 training questions become the development set.
head -n -500 "$DATA/trec/train_5500.label" > "$OUT/trec_train.label"
tail -n 500 "$DATA/trec/train_5500.label" > "$OUT/trec_dev.label"

CORPUS="$DATA/wikitext2/valid.txt,$DATA/wikitext2/test.txt"
if [ ! -f "$OUT/vocab.txt" ]; then
  "$PY" "$ROOT/tools/build_vocab.py" --corpus="$CORPUS" --vocab_size=8000 \
      --output="$OUT/vocab.txt" > "$OUT/vocab.log" 2>&1
fi

for objective in mlm mlm_nsp span_sbo; do
  if [ ! -f "$OUT/pretrain_$objective/metrics.json" ]; then
    start=$(date +%s)
    "$PY" "$ROOT/tools/pretrain.py" --preset=bert_mini --objective=$objective \
        --corpus="$CORPUS" --vocab="$OUT/vocab.txt" --model_dir="$OUT/pretrain_$objective" \
        --max_steps="$STEPS" --steps_per_checkpoint=200 --batch_size=32 \
        --learning_rate=5e-4 > "$OUT/pretrain_$objective.log" 2>&1
    echo "pretrain $objective: $(( $(date +%s) - start )) s wall, $(cat "$OUT/pretrain_$objective/metrics.json" | tr -d '\n ')"
  fi
done

finetune() {  # finetune NAME TRAIN_FILE EPOCHS INIT LR
  local run="$OUT/$1_$4_lr$5" checkpoint=()
  [ -f "$run/metrics.json" ] && [ -f "$run/test.json" ] && return
  [ "$4" != random ] && checkpoint=(--init_checkpoint="$OUT/pretrain_$4/encoder")
  local start=$(date +%s)
  "$PY" "$ROOT/tools/train.py" --task=classification --preset=bert_mini \
      --vocab="$OUT/vocab.txt" "${checkpoint[@]}" \
      --train_data="$2" --eval_data="$OUT/trec_dev.label" \
      --model_dir="$run" --overwrite --epochs="$3" --batch_size=32 \
      --learning_rate="$5" --head_learning_rate="$5" --max_seq_length=64 > "$run.log" 2>&1
  "$PY" "$ROOT/tools/evaluate.py" --model_dir="$run" \
      --data="$DATA/trec/TREC_10.label" > "$run/test.json" 2>> "$run.log"
  echo "$1 init=$4 lr=$5: $(( $(date +%s) - start )) s, test $(cat "$run/test.json")"
}

for lr in $LEARNING_RATES; do
  for init in random mlm mlm_nsp span_sbo; do
    finetune trec "$OUT/trec_train.label" "$EPOCHS" $init $lr
  done
done
if [ -n "${LOW_RESOURCE:-}" ]; then
  head -n "$LOW_RESOURCE" "$OUT/trec_train.label" > "$OUT/trec_train$LOW_RESOURCE.label"
  for init in random mlm mlm_nsp span_sbo; do
    finetune "trec$LOW_RESOURCE" "$OUT/trec_train$LOW_RESOURCE.label" 10 $init 5e-4
  done
fi
