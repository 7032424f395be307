//! Storage faults on a real file system: a disk that fills up and frees again, a store on a
//! read-only file system. These tests mount a small tmpfs; where mounting is not allowed they
//! are compiled as ignored (see build.rs), or say "skipped" on stderr when a mount is refused.

use crate::common::*;
use skillbase_store::{DbUrl, Scope, StatusChange, Store, StoreError};
use std::sync::Arc;

/// A skill whose SKILL.md is about 120 KB, different for each `i` (blobs are stored once per
/// content, so equal bodies would not grow the database).
fn big(name: &str, i: usize) -> skillbase_format::Bundle {
    skill(
        name,
        &format!("{i} {}", "grows the write-ahead log. ".repeat(4_500)),
    )
}

fn is_fault(e: &StoreError) -> bool {
    matches!(e, StoreError::DiskFull(_) | StoreError::Unavailable(_))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(skillbase_mount),
    ignore = "storage-fault tests skipped: they mount a tmpfs (root where mount is allowed)"
)]
async fn writes_work_again_once_a_full_disk_has_space() {
    let Some(fs) = Tmpfs::mount("writes_work_again_once_a_full_disk_has_space", "4m") else {
        return;
    };
    let url = DbUrl::Sqlite(fs.path().join("skillbase.db"));
    let store = Arc::new(Store::open(&url).await.unwrap());
    store
        .put(put(Scope::Shared, skill("before", "written before"), None))
        .await
        .unwrap();
    fs.fill("filler");

    // Full: writes fail as a full disk (or an I/O fault), never as a bug or corrupt data, and
    // never leave a connection that refuses the next write for another reason.
    let mut answered = vec!["before".to_owned()];
    let mut failed = Vec::new();
    for round in 0..3 {
        let mut tasks = Vec::new();
        for k in 0..6 {
            let store = store.clone();
            let name = format!("full-{round}-{k}");
            tasks.push(tokio::spawn(async move {
                let r = store
                    .put(put(Scope::Shared, big(&name, round * 10 + k), None))
                    .await;
                (name, r)
            }));
        }
        for t in tasks {
            match t.await.unwrap() {
                (name, Ok(_)) => answered.push(name),
                (name, Err(e)) => {
                    assert!(is_fault(&e), "{name}: {e:?}");
                    assert!(
                        matches!(e, StoreError::DiskFull(_))
                            || e.to_string().contains("disk is full")
                            || e.to_string().contains("unavailable"),
                        "{e}"
                    );
                    failed.push(name);
                }
            }
        }
    }
    assert!(!failed.is_empty(), "the disk never filled up");
    let status = store
        .set_status(
            &Scope::Shared,
            "before",
            StatusChange::Disable,
            &human(),
            serde_json::json!("full"),
        )
        .await;
    if let Err(e) = &status {
        assert!(is_fault(e), "{e:?}");
    }

    // Space again: every write works, on every connection of the pool, without a restart.
    std::fs::remove_file(fs.path().join("filler")).unwrap();
    let mut tasks = Vec::new();
    for k in 0..20 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let name = format!("after-{k}");
            store
                .put(put(Scope::Shared, skill(&name, "after"), None))
                .await
                .map(|_| name)
        }));
    }
    for t in tasks {
        answered.push(t.await.unwrap().expect("a write once space is back"));
    }
    let change = if status.is_ok() {
        StatusChange::Enable
    } else {
        StatusChange::Disable
    };
    store
        .set_status(
            &Scope::Shared,
            "before",
            change,
            &human(),
            serde_json::json!("ok"),
        )
        .await
        .unwrap();

    // What was answered is what is stored, and nothing a write failed on.
    let idx = store.index();
    let reopened = Store::open(&url).await.unwrap();
    let stored = reopened.index();
    for name in &answered {
        assert!(
            idx.get(&Scope::Shared, name).is_some(),
            "{name} not in the index"
        );
        let e = stored.get(&Scope::Shared, name);
        assert!(e.is_some(), "{name} was answered but is not stored");
        let (_, b) = reopened.bundle(&Scope::Shared, name, None).await.unwrap();
        assert_eq!(b.digest(), e.unwrap().digest);
    }
    for name in &failed {
        assert!(
            stored.get(&Scope::Shared, name).is_none(),
            "{name} failed but is stored"
        );
        assert!(
            idx.get(&Scope::Shared, name).is_none(),
            "{name} failed but is indexed"
        );
    }
    reopened.close().await;
    store.close().await;
}

/// A store on a read-only file system is opened read-only: reads are served, writes are
/// refused with a message saying why, and nothing is changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(skillbase_mount),
    ignore = "storage-fault tests skipped: they mount a tmpfs (root where mount is allowed)"
)]
async fn a_store_on_a_read_only_file_system_serves_reads() {
    let Some(fs) = Tmpfs::mount("a_store_on_a_read_only_file_system_serves_reads", "8m") else {
        return;
    };
    let url = DbUrl::Sqlite(fs.path().join("skillbase.db"));
    let store = Store::open(&url).await.unwrap();
    assert_eq!(store.read_only(), None);
    store
        .put(put(Scope::Shared, skill("kept", "readable"), None))
        .await
        .unwrap();
    store.close().await;
    fs.remount(true);
    let result = async {
        let store = Store::open(&url).await.expect("a read-only store opens");
        let why = store.read_only().expect("opened read-only").to_owned();
        assert!(why.contains("Read-only file system"), "{why}");
        assert_eq!(
            store.index().get(&Scope::Shared, "kept").unwrap().body,
            "readable"
        );
        let (_, b) = store.bundle(&Scope::Shared, "kept", None).await.unwrap();
        assert_eq!(b.files().len(), 1);
        assert_eq!(
            store.history(&Scope::Shared, "kept").await.unwrap().len(),
            1
        );
        let e = store
            .put(put(Scope::Shared, skill("new", "refused"), None))
            .await
            .unwrap_err();
        assert!(matches!(e, StoreError::ReadOnly { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.contains("read-only") && msg.contains("Read-only file system"),
            "{msg}"
        );
        assert!(store.index().get(&Scope::Shared, "new").is_none());
        store.close().await;
    }
    .await;
    fs.remount(false);
    result
}
