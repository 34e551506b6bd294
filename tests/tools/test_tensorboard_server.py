"""The real `tensorboard` program, on a free localhost port, serves what a finished tagging
run wrote: the per-step learning rate, per-type F1 series, the HParams session with its
final metrics and the decoded validation examples, read back through its HTTP API."""

import json
import os

import pytest

from nlpzoo.tasks.training.optimization import WarmupLinearDecay
from nlpzoo.tasks.words.tags import split_tag
from nlpzoo.tools.cli.tensorboard_server import TensorBoardServer

def test_tensorboard_serves_a_finished_tagging_run(trained_tagger_dir, tmp_path):
    with open(os.path.join(trained_tagger_dir, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(trained_tagger_dir, "metrics.json")) as f:
        metrics = json.load(f)
    with open(tmp_path / "server.log", "w") as output, TensorBoardServer(
            os.path.join(trained_tagger_dir, "logs"), output) as server:
        server.wait_for_runs(["train", "validation"])
        assert "hparams" not in server.get("/data/runs")  # no run of one-point charts

        # Per-step learning rate (the fixture logs every step): the schedule's value
        # at the step before, as the optimizer applied it.
        total = config["total_steps"]
        schedule = WarmupLinearDecay(config["learning_rate"],
                                     int(config["warmup_fraction"] * total), total)
        rates = server.get("/data/plugin/scalars/scalars", run="train",
                           tag="learning_rate/step")
        assert [step for _, step, _ in rates] == list(range(1, total + 1))
        for _, step, rate in rates:
            assert rate == pytest.approx(float(schedule(step - 1)), rel=1e-6, abs=1e-12)
        losses = server.get("/data/plugin/scalars/scalars", run="train", tag="loss/step")
        assert [step for _, step, _ in losses] == list(range(1, total + 1))

        # Per-type precision, recall and F1 of every entity type, per epoch.
        tags = server.get("/data/plugin/scalars/tags")["validation"]
        # The padding fraction: an internal figure, in the debug/ group only.
        assert [tag for tag in tags if "padding" in tag] == ["debug/padding_fraction"]
        types = sorted({split_tag(label)[1] for label in config["labels"] if label != "O"})
        assert types and all(f"entity/{entity_type}/{measure}" in tags for entity_type in types
                             for measure in ("precision", "recall", "f1"))
        for entity_type in types:
            [(_, epoch, f1)] = server.get("/data/plugin/scalars/scalars", run="validation",
                                          tag=f"entity/{entity_type}/f1")
            # One epoch: the final evaluation is that epoch's model.
            assert epoch == 0 and f1 == pytest.approx(metrics[f"{entity_type}_f1"])

        # HParams: one session with the run's settings and final metrics.
        groups = server.post("/data/plugin/hparams/session_groups", {
            "experimentName": "", "startIndex": 0, "sliceSize": 10,
            "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE",
                                "STATUS_RUNNING"]})["sessionGroups"]
        [group] = groups
        # Named by the run directory, not a hash; the session is the validation run.
        assert group["name"] == os.path.basename(trained_tagger_dir)
        assert group["hparams"]["task"] == "tagging"
        assert group["hparams"]["learning_rate"] == pytest.approx(config["learning_rate"])
        assert group["hparams"]["preset"] == config["preset"]
        assert [session["name"] for session in group["sessions"]] == ["validation"]
        final = {value["name"]["tag"]: value["value"] for value in group["metricValues"]}
        for name in ("entity_f1", "entity_precision", "token_accuracy"):
            assert final[f"final/{name}"] == pytest.approx(metrics[name], rel=1e-6)

        # The decoded validation examples of the epoch, rendered from Markdown.
        [entry] = server.get("/data/plugin/text/text", run="validation", tag="examples")
        assert entry["step"] == 0
        assert entry["text"].count("<li>gold:") == entry["text"].count("<li>predicted:") >= 1
        assert "<strong>[" in entry["text"]  # the gold entities in brackets
    assert server.process.returncode is not None  # stopped
