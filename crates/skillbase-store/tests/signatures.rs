//! Signatures (issue 20): an import keeps each verified signature with its revision (history,
//! the index entry, `Store::signature`), on the one-by-one and the bulk path; a signature that
//! does not match its bundle is refused with nothing written; a trust source is pinned to its
//! first signer, a change is refused unless accepted, and each pin is a `signer_pinned` event.

use crate::common::*;
use skillbase_format::signature::{Signature, SigningKey};
use skillbase_store::{Author, Scope, StoreError};

fn signed(name: &str, body: &str, seed: u8) -> (skillbase_format::Bundle, Option<Signature>) {
    let b = skill(name, body);
    let sig = SigningKey::from_seed([seed; 32])
        .sign(name, None, &b.digest().to_string())
        .unwrap();
    (b, Some(sig))
}

async fn signatures_are_kept_and_sources_pinned(db: TestDb) {
    let store = db.open().await;
    let s = Scope::Shared;
    let source = Author::Import("/srv/vendor".into());
    let alice = SigningKey::from_seed([1; 32]).public().fingerprint();
    let bob = SigningKey::from_seed([2; 32]).public().fingerprint();
    store
        .import_signed(
            &s,
            vec![signed("alpha", "v1", 1), (skill("plain", "p"), None)],
            &source,
            "m",
            &|_| {},
        )
        .await
        .unwrap();
    let h = store.history(&s, "alpha").await.unwrap();
    assert_eq!(h[0].signer.as_deref(), Some(alice.as_str()));
    assert_eq!(store.history(&s, "plain").await.unwrap()[0].signer, None);
    assert_eq!(
        store.index().get(&s, "alpha").unwrap().signer.as_deref(),
        Some(alice.as_str())
    );
    let kept = store.signature(&s, "alpha", None).await.unwrap().unwrap();
    assert_eq!(kept.signer(), alice);
    kept.verify("alpha", None, &h[0].digest).unwrap();
    assert_eq!(
        store.pinned_signer("/srv/vendor").await.unwrap().as_deref(),
        Some(alice.as_str())
    );

    // A signature over other files: refused, nothing written, nothing pinned elsewhere.
    let (b, _) = signed("alpha", "v2", 1);
    let (_, other) = signed("alpha", "v3", 1);
    let e = store
        .import_signed(&s, vec![(b, other)], &source, "m", &|_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(&e, StoreError::Untrusted(m) if m.contains("does not match")),
        "{e}"
    );
    assert_eq!(store.history(&s, "alpha").await.unwrap().len(), 1);

    // Another signer for the pinned source: refused; accepted once the process says so.
    let e = store
        .import_signed(&s, vec![signed("alpha", "v2", 2)], &source, "m", &|_| {})
        .await
        .unwrap_err();
    assert!(e.to_string().contains("--accept-new-signer"), "{e}");
    assert_eq!(store.history(&s, "alpha").await.unwrap().len(), 1);
    store.set_accept_new_signer(true);
    store
        .import_signed(&s, vec![signed("alpha", "v2", 2)], &source, "m", &|_| {})
        .await
        .unwrap();
    store.set_accept_new_signer(false);
    assert_eq!(
        store.pinned_signer("/srv/vendor").await.unwrap().as_deref(),
        Some(bob.as_str())
    );
    let pins = store
        .events(&skillbase_store::EventFilter {
            kind: Some("signer_pinned".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(pins.len(), 2);
    assert_eq!(pins[1].data["previous"], serde_json::json!(alice));
    assert_eq!(pins[1].data["signer"], serde_json::json!(bob));
    assert_eq!(pins[1].actor.as_deref(), Some("import:/srv/vendor"));

    // The bulk path (40 skills) keeps every signature, including on unchanged revisions.
    let many: Vec<_> = (0..40)
        .map(|i| signed(&format!("b{i:02}"), "x", 2))
        .collect();
    store
        .import_signed(&s, many.clone(), &source, "m", &|_| {})
        .await
        .unwrap();
    for i in [0, 39] {
        let h = store.history(&s, &format!("b{i:02}")).await.unwrap();
        assert_eq!(h[0].signer.as_deref(), Some(bob.as_str()));
    }
    // The same files given unsigned before are signed now: the signature joins the revision.
    let unsigned: Vec<_> = (0..40)
        .map(|i| (skill(&format!("c{i:02}"), "x"), None))
        .collect();
    let other = Author::Import("/srv/other".into());
    store
        .import_signed(&s, unsigned, &other, "m", &|_| {})
        .await
        .unwrap();
    let resigned: Vec<_> = (0..40)
        .map(|i| signed(&format!("c{i:02}"), "x", 1))
        .collect();
    let r = store
        .import_signed(&s, resigned, &other, "m", &|_| {})
        .await
        .unwrap();
    assert_eq!(r.unchanged.len(), 40);
    let h = store.history(&s, "c07").await.unwrap();
    assert_eq!((h.len(), h[0].signer.as_deref()), (1, Some(alice.as_str())));
    db.cleanup().await;
}

suite!(signatures_are_kept_and_sources_pinned);
