//! Versions (issue 20): each revision records the `version` its SKILL.md declares; a write not
//! raising it is a warning, or refused under `[store] versions = "require-increase"`, on every
//! write path (one skill, the bulk import path), and a refused write changes nothing.

use crate::common::*;
use skillbase_store::config::{Config, VersionPolicy};
use skillbase_store::{Scope, StoreError, WriteKind};

fn versioned(name: &str, version: &str, body: &str) -> skillbase_format::Bundle {
    skill_with(name, &format!("version: \"{version}\"\n"), body)
}

async fn versions_are_recorded_and_compared(db: TestDb) {
    let store = db.open().await;
    assert_eq!(store.version_policy(), VersionPolicy::Warn);
    let o = store
        .put(put(Scope::Shared, versioned("alpha", "1.0.0", "v1"), None))
        .await
        .unwrap();
    assert_eq!((o.kind.clone(), o.warnings.len()), (WriteKind::Created, 0));
    let o = store
        .put(put(Scope::Shared, versioned("alpha", "1.1.0", "v2"), None))
        .await
        .unwrap();
    assert!(o.warnings.is_empty(), "{o:?}");
    // Lower: written, with a warning saying what to write.
    let o = store
        .put(put(Scope::Shared, versioned("alpha", "1.0.5", "v3"), None))
        .await
        .unwrap();
    assert_eq!((o.kind.clone(), o.rev), (WriteKind::Modified, 3));
    assert_eq!(o.warnings.len(), 1, "{o:?}");
    assert!(
        o.warnings[0].contains("version 1.0.5 is not higher than 1.1.0")
            && o.warnings[0].contains("`version: \"1.1.1\"`"),
        "{o:?}"
    );
    // The same bundle again is no write, so no warning.
    let o = store
        .put(put(Scope::Shared, versioned("alpha", "1.0.5", "v3"), None))
        .await
        .unwrap();
    assert_eq!(
        (o.kind.clone(), o.warnings.len()),
        (WriteKind::Unchanged, 0)
    );
    let h = store.history(&Scope::Shared, "alpha").await.unwrap();
    let versions: Vec<_> = h.iter().map(|r| r.version.as_deref()).collect();
    assert_eq!(versions, [Some("1.0.0"), Some("1.1.0"), Some("1.0.5")]);
    for r in &h {
        assert!(
            r.digest.starts_with("sha256:") && r.digest.len() == 71,
            "{r:?}"
        );
    }
    let (info, bundle) = store.bundle(&Scope::Shared, "alpha", None).await.unwrap();
    assert_eq!(info.version.as_deref(), Some("1.0.5"));
    assert_eq!(info.digest, bundle.digest().to_string());

    // Under require-increase, equal, lower and none are refused and change nothing.
    Config::parse(
        "[store]\nversions = \"require-increase\"\n",
        "skillbase.toml",
    )
    .unwrap()
    .apply(&store)
    .await
    .unwrap();
    assert_eq!(store.version_policy(), VersionPolicy::RequireIncrease);
    for bundle in [
        versioned("alpha", "1.0.5", "v4"),
        versioned("alpha", "1.0.5+build.2", "v4"),
        versioned("alpha", "0.9.0", "v4"),
        versioned("alpha", "1.0.5-rc.1", "v4"),
        skill("alpha", "v4"),
    ] {
        let e = store
            .put(put(Scope::Shared, bundle, None))
            .await
            .unwrap_err();
        assert!(matches!(e, StoreError::VersionNotIncreased { .. }), "{e:?}");
        let m = e.to_string();
        assert!(
            m.contains("require-increase") && m.contains("`version: \"1.0.6\"`"),
            "{m}"
        );
    }
    assert_eq!(
        store.history(&Scope::Shared, "alpha").await.unwrap().len(),
        3
    );
    assert_eq!(
        store.index().get(&Scope::Shared, "alpha").unwrap().body,
        "v3"
    );
    // Pending writes are checked too.
    let e = store
        .put_pending(put(Scope::Shared, versioned("alpha", "1.0.0", "v4"), None))
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::VersionNotIncreased { .. }), "{e:?}");
    // Higher is written; revert (choosing an older revision) is not a write of a version.
    let o = store
        .put(put(Scope::Shared, versioned("alpha", "1.0.6", "v4"), None))
        .await
        .unwrap();
    assert_eq!((o.rev, o.warnings.len()), (4, 0));
    store
        .revert(&Scope::Shared, "alpha", 1, &human())
        .await
        .unwrap();
    // An unversioned skill is never checked.
    store
        .put(put(Scope::Shared, skill("beta", "b1"), None))
        .await
        .unwrap();
    let o = store
        .put(put(Scope::Shared, skill("beta", "b2"), None))
        .await
        .unwrap();
    assert_eq!((o.kind.clone(), o.warnings.len()), (WriteKind::Modified, 0));
    assert_eq!(
        store.history(&Scope::Shared, "beta").await.unwrap()[1].version,
        None
    );
    // Back to the default.
    Config::parse("", "f").unwrap().apply(&store).await.unwrap();
    assert_eq!(store.version_policy(), VersionPolicy::Warn);
    db.cleanup().await;
}

async fn imports_compare_versions_on_the_bulk_path(db: TestDb) {
    let store = db.open().await;
    let many = |version: &str, body: &str| -> Vec<skillbase_format::Bundle> {
        (0..40)
            .map(|i| versioned(&format!("s{i:02}"), version, body))
            .collect()
    };
    let r = store
        .import(
            &Scope::Shared,
            many("2.0.0", "a"),
            &human(),
            "first",
            &|_| {},
        )
        .await
        .unwrap();
    assert_eq!(r.created.len(), 40);
    let r = store
        .import(
            &Scope::Shared,
            many("1.0.0", "b"),
            &human(),
            "lower",
            &|_| {},
        )
        .await
        .unwrap();
    assert_eq!(r.changed.len(), 40);
    assert!(
        r.outcomes.iter().all(|o| o.warnings.len() == 1),
        "{:?}",
        r.outcomes[0]
    );
    store.set_version_policy(VersionPolicy::RequireIncrease);
    let e = store
        .import(
            &Scope::Shared,
            many("1.0.0", "c"),
            &human(),
            "equal",
            &|_| {},
        )
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::VersionNotIncreased { .. }), "{e:?}");
    // All or nothing: no skill took a third revision.
    for i in 0..40 {
        let h = store
            .history(&Scope::Shared, &format!("s{i:02}"))
            .await
            .unwrap();
        assert_eq!(h.len(), 2);
        assert_eq!(h[1].version.as_deref(), Some("1.0.0"));
    }
    let r = store
        .import(
            &Scope::Shared,
            many("1.0.1", "c"),
            &human(),
            "higher",
            &|_| {},
        )
        .await
        .unwrap();
    assert_eq!(r.changed.len(), 40);
    db.cleanup().await;
}

suite!(
    versions_are_recorded_and_compared,
    imports_compare_versions_on_the_bulk_path
);
