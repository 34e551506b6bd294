"""The exported SavedModel stores each weight once (it held every weight twice)."""

import os

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from nlpzoo.tasks.modeling.serving import SIGNATURE, export_saved_model, serving_function
from nlpzoo.zoo.runs import directory as md


def _weight_bytes(model):
    return sum(int(np.prod(w.shape)) * np.dtype(w.dtype).itemsize for w in model.weights)


def _constant_bytes(saved_model_pb):
    """Bytes of tensor constants in the graph and its functions (weights captured by value)."""
    proto = saved_model_pb2.SavedModel()
    with open(saved_model_pb, "rb") as f:
        proto.ParseFromString(f.read())
    total = 0
    for meta_graph in proto.meta_graphs:
        graph = meta_graph.graph_def
        nodes = list(graph.node) + [n for f in graph.library.function for n in f.node_def]
        for node in nodes:
            if node.op == "Const":
                total += len(node.attr["value"].tensor.tensor_content)
    return total


def test_saved_model_holds_each_weight_once_and_serves_as_in_python(trained_tagger_dir,
                                                                     tmp_path):
    trained = md.load_models(trained_tagger_dir)
    path = str(tmp_path / "saved")
    export_saved_model(trained.task, trained.model, trained.preprocessor, trained.labels, path)
    weights = _weight_bytes(trained.model)
    variables = sum(os.path.getsize(os.path.join(path, "variables", name))
                    for name in os.listdir(os.path.join(path, "variables")))
    # Each weight once; the index and the few metric counters are small.
    assert weights <= variables <= 1.05 * weights, (variables, weights)
    assert _constant_bytes(os.path.join(path, "saved_model.pb")) < 0.01 * weights
    sentences = tf.constant(["EU rejects German call to boycott British lamb .",
                             "Peter Blackburn"])
    serve, _ = serving_function(trained.task, trained.model, trained.preprocessor,
                                trained.labels)
    expected = serve(sentences)
    served = tf.saved_model.load(path).signatures[SIGNATURE](text=sentences)
    assert set(served) == set(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(served[name].numpy(), value.numpy(), err_msg=name)
