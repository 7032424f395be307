//! Skill vectors: stored per (model, digest), read back by any store on the same database, the
//! first vector of a digest kept, bad input refused whole.

use crate::common::*;
use skillbase_store::DbUrl;

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

/// Every vector of one store copied into another (`eval --sweep --keep`): page by page, every
/// model, a row already there left as it is, a row that does not decode skipped.
async fn vectors_copy_between_stores(db: TestDb) {
    let from = db.open().await;
    // More rows than one page (2,000), over two models.
    let rows = |n: usize, salt: f32| -> Vec<(String, Vec<f32>)> {
        (0..n)
            .map(|i| (format!("sha256:{i:064x}"), vec![i as f32, salt]))
            .collect()
    };
    from.put_vectors("a-model", &rows(2_100, 1.0))
        .await
        .unwrap();
    from.put_vectors("b-model", &rows(30, 2.0)).await.unwrap();
    let kept = TestDb::sqlite();
    let to = kept.open().await;
    // A row the destination already holds keeps its vector.
    to.put_vectors(
        "b-model",
        &[(format!("sha256:{:064x}", 3), vec![-1.0, -1.0])],
    )
    .await
    .unwrap();
    assert_eq!(to.copy_vectors_from(&from).await.unwrap(), 2_130);
    assert_eq!(to.vector_count("a-model").await.unwrap(), 2_100);
    assert_eq!(to.vector_count("b-model").await.unwrap(), 30);
    let got = to
        .vectors(
            "b-model",
            &[format!("sha256:{:064x}", 3), format!("sha256:{:064x}", 4)],
        )
        .await
        .unwrap();
    assert!(
        got.contains(&(format!("sha256:{:064x}", 3), vec![-1.0, -1.0])),
        "{got:?}"
    );
    assert!(
        got.contains(&(format!("sha256:{:064x}", 4), vec![4.0, 2.0])),
        "{got:?}"
    );
    // A row that does not decode (written by something else) is skipped, not copied, and the
    // rows after it still are.
    if let DbUrl::Sqlite(path) = &kept.url {
        use sqlx::Connection;
        let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
            .await
            .unwrap();
        sqlx::query(
            "INSERT INTO skill_vectors (model, digest, dim, vector, created_at) \
             VALUES ('a-model', 'sha256:zz-broken', 3, x'00', 0), ('c-model', $1, 1, x'0000803f', 0)",
        )
        .bind(format!("sha256:{:064x}", 9))
        .execute(&mut c)
        .await
        .unwrap();
    }
    let back_db = TestDb::sqlite();
    let back = back_db.open().await;
    assert_eq!(back.copy_vectors_from(&to).await.unwrap(), 2_131);
    assert_eq!(back.vector_count("a-model").await.unwrap(), 2_100);
    assert_eq!(back.vector_count("c-model").await.unwrap(), 1);
    // An empty store copies nothing.
    let empty = TestDb::sqlite();
    assert_eq!(
        from.copy_vectors_from(&empty.open().await).await.unwrap(),
        0
    );
    db.cleanup().await;
}

suite!(
    vectors_are_kept_per_model_and_digest,
    vectors_copy_between_stores
);
