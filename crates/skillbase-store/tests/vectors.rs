//! Skill vectors: stored per (model, digest), read back by any store on the same database, the
//! first vector of a digest kept, bad input refused whole.

use crate::common::*;

fn digest(n: u8) -> String {
    format!("sha256:{}", format!("{n:02x}").repeat(32))
}

async fn vectors_are_kept_per_model_and_digest(db: TestDb) {
    let store = db.open().await;
    let m = "all-MiniLM-L6-v2@0123456789abcdef/v1";
    assert!(store.vectors(m, &[digest(1)]).await.unwrap().is_empty());
    store
        .put_vectors(
            m,
            &[(digest(1), vec![0.5, -0.5]), (digest(2), vec![1.0, 0.0])],
        )
        .await
        .unwrap();
    // The same digest again keeps the first vector (a second server raced to the same row).
    store
        .put_vectors(m, &[(digest(1), vec![9.0, 9.0])])
        .await
        .unwrap();
    // A second store on the same database (a restart, another server) reads them.
    let other = db.open().await;
    let mut got = other
        .vectors(m, &[digest(1), digest(2), digest(3)])
        .await
        .unwrap();
    got.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        got,
        vec![(digest(1), vec![0.5, -0.5]), (digest(2), vec![1.0, 0.0])]
    );
    // Another model's vectors are another model's.
    assert!(
        other
            .vectors("other", &[digest(1)])
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(other.vector_count(m).await.unwrap(), 2);
    // Many digests at once (more than one statement's worth).
    let many: Vec<(String, Vec<f32>)> = (0..=255u8)
        .flat_map(|a| [(format!("sha256:{a:02x}{}", "ab".repeat(31)), vec![a as f32])])
        .collect();
    store.put_vectors("bulk", &many).await.unwrap();
    let keys: Vec<String> = many.iter().map(|(d, _)| d.clone()).collect();
    assert_eq!(store.vectors("bulk", &keys).await.unwrap().len(), 256);

    // Bad input: refused whole, nothing written.
    for (model, rows, want) in [
        ("", vec![(digest(4), vec![1.0])], "model id"),
        ("m\n", vec![(digest(4), vec![1.0])], "model id"),
        (
            "m",
            vec![(digest(4), vec![1.0]), ("nope".into(), vec![1.0])],
            "digest",
        ),
        ("m", vec![(digest(4), vec![f32::NAN])], "finite"),
        ("m", vec![(digest(4), vec![])], "finite"),
        ("m", vec![(digest(4), vec![0.0; 8_193])], "finite"),
    ] {
        let e = store
            .put_vectors(model, &rows)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{model:?}: {e}");
    }
    assert!(store.vectors("m", &[digest(4)]).await.unwrap().is_empty());
    db.cleanup().await;
}

suite!(vectors_are_kept_per_model_and_digest);
