//! The reranker against an independent implementation (ONNX Runtime running the same file, the
//! `tokenizers` library reading the same tokenizer.json: `gen_rerank_reference.py`), and its
//! loader against broken files. The tests that need the weights run when
//! SKILLBASE_TEST_RERANKER_DIR names the folder `skillbase model pull` filled; otherwise they
//! are reported as ignored.

use skillbase_embed::{EmbedError, Reranker};
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(
        std::env::var("SKILLBASE_TEST_RERANKER_DIR").expect("SKILLBASE_TEST_RERANKER_DIR"),
    )
}

fn fixture() -> serde_json::Value {
    let text = include_str!("fixtures/rerank_reference.json");
    serde_json::from_str(text).unwrap()
}

#[test]
#[cfg_attr(
    not(skillbase_reranker),
    ignore = "needs the reranker: set SKILLBASE_TEST_RERANKER_DIR (the ms-marco-MiniLM-L-12-v2 folder `skillbase model pull` filled)"
)]
fn tokens_and_logits_match_the_reference() {
    let r = Reranker::load(&dir()).unwrap();
    assert!(
        r.model_id()
            .starts_with("ms-marco-MiniLM-L-12-v2@1225ccd6afd0f1b4"),
        "{r:?}"
    );
    let mut worst = 0f32;
    for case in fixture()["cases"].as_array().unwrap() {
        let (q, t) = (
            case["query"].as_str().unwrap(),
            case["text"].as_str().unwrap(),
        );
        let want: Vec<u32> = case["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        let (ids, second) = r.pair_ids(q, t, 512);
        assert_eq!(ids, want, "{q} / {t}");
        assert_eq!(
            second,
            case["second"].as_u64().unwrap() as usize,
            "{q} / {t}"
        );
        let got = r.score(q, &[t], 512)[0];
        let logit = case["logit"].as_f64().unwrap() as f32;
        worst = worst.max((got - logit).abs());
    }
    eprintln!("largest difference from ONNX Runtime: {worst}");
    // The file's 8-bit matrices are quantized again per row to 7 bits and the activations per
    // token: the logits move by a few tenths on a scale of ±11.
    assert!(worst < 0.6, "largest difference from ONNX Runtime: {worst}");
    // Packed together, each pair gets the logit it gets alone (the order of sums aside).
    let cases = fixture()["cases"].as_array().unwrap().clone();
    let q = cases[2]["query"].as_str().unwrap();
    let texts: Vec<&str> = cases[2..5]
        .iter()
        .map(|c| c["text"].as_str().unwrap())
        .collect();
    let packed = r.score(q, &texts, 512);
    for (t, p) in texts.iter().zip(&packed) {
        assert!((r.score(q, &[t], 512)[0] - p).abs() < 0.05, "{t}: {p}");
    }
    // The refund skill first, by a margin the reference has too.
    assert!(
        packed[0] > packed[1] + 3.0 && packed[0] > packed[2] + 3.0,
        "{packed:?}"
    );
}

#[test]
#[cfg_attr(
    not(skillbase_reranker),
    ignore = "needs the reranker: set SKILLBASE_TEST_RERANKER_DIR (the ms-marco-MiniLM-L-12-v2 folder `skillbase model pull` filled)"
)]
fn long_pairs_are_cut_to_the_budget_message_first() {
    let r = Reranker::load(&dir()).unwrap();
    let long_message = "please look at this ".repeat(100);
    let long_text = "a skill with a very long body ".repeat(100);
    for max in [8, 64, 160, 512, 4096] {
        let (ids, second) = r.pair_ids(&long_message, &long_text, max);
        let cap = max.clamp(8, 512);
        assert_eq!(ids.len(), cap, "{max}");
        // The message gets at most 64 pieces (and half the budget), the text the rest.
        assert_eq!(second, 64.min(cap / 2), "{max}");
        assert!(r.score(&long_message, &[&long_text], max)[0].is_finite());
    }
    // Empty inputs are a pair of markers, not a failure.
    let (ids, second) = r.pair_ids("", "", 160);
    assert_eq!((ids.len(), second), (3, 2));
    assert!(r.score("", &[""], 160)[0].is_finite());
    assert!(r.score("anything", &[], 160).is_empty());
}

#[test]
#[cfg_attr(
    not(skillbase_reranker),
    ignore = "needs the reranker: set SKILLBASE_TEST_RERANKER_DIR (the ms-marco-MiniLM-L-12-v2 folder `skillbase model pull` filled)"
)]
fn a_truncated_or_foreign_model_file_is_refused_with_a_message() {
    let real = std::fs::read(dir().join("model.onnx")).unwrap();
    let tokenizer = std::fs::read(dir().join("tokenizer.json")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let cut = [16, 4096, real.len() / 2, real.len() - 1];
    for (i, bytes) in cut
        .iter()
        .map(|&n| real[..n].to_vec())
        .chain([
            b"not an onnx file at all".to_vec(),
            vec![0xff; 64],
            Vec::new(),
        ])
        .enumerate()
    {
        let d = tmp.path().join(format!("m{i}"));
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("model.onnx"), &bytes).unwrap();
        std::fs::write(d.join("tokenizer.json"), &tokenizer).unwrap();
        // Another file than the pinned one needs a config.json saying its heads: without one
        // it is refused at once; with one, the file is read and refused for what it holds.
        let err = Reranker::load(&d).unwrap_err();
        assert!(
            err.to_string().contains("pull the reranker again"),
            "{i}: {err}"
        );
        std::fs::write(d.join("config.json"), r#"{"num_attention_heads": 12}"#).unwrap();
        let err = Reranker::load(&d).unwrap_err();
        assert!(matches!(err, EmbedError::Config { .. }), "{i}: {err}");
        assert!(
            err.to_string().contains("pull the reranker again"),
            "{i}: {err}"
        );
    }
}

#[test]
fn a_missing_folder_is_not_present_and_does_not_load() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(!Reranker::present(tmp.path()));
    let err = Reranker::load(tmp.path()).unwrap_err();
    assert!(matches!(err, EmbedError::MissingFile { .. }), "{err}");
}
