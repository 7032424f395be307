//! Seed folders: followed until edited in the store, created together, watched.

use crate::common::*;
use skillbase_store::{EventFilter, Scope};
use std::sync::Arc;

async fn seeds_follow_until_edited(db: TestDb) {
    let store = db.open().await;
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("seeded");
    std::fs::create_dir(&folder).unwrap();
    let write = |body: &str| {
        std::fs::write(
            folder.join("SKILL.md"),
            format!("---\nname: seeded\ndescription: A seeded skill.\n---\n{body}\n"),
        )
        .unwrap()
    };
    write("v1");
    let acts = skillbase_store::seed::sync_dir(&store, dir.path())
        .await
        .unwrap();
    assert!(
        matches!(
            &acts[0],
            skillbase_store::seed::SeedAction::Created { rev: 1, .. }
        ),
        "{acts:?}"
    );
    let acts = skillbase_store::seed::sync_dir(&store, dir.path())
        .await
        .unwrap();
    assert!(
        matches!(
            &acts[0],
            skillbase_store::seed::SeedAction::Unchanged { .. }
        ),
        "{acts:?}"
    );
    write("v2");
    let acts = skillbase_store::seed::sync_dir(&store, dir.path())
        .await
        .unwrap();
    assert!(
        matches!(
            &acts[0],
            skillbase_store::seed::SeedAction::Updated { rev: 2, .. }
        ),
        "{acts:?}"
    );
    let e = store.index().get(&Scope::Shared, "seeded").unwrap().clone();
    assert!(e.author.starts_with("seed:"), "{}", e.author);
    assert!(e.seed_path.is_some());

    // Someone edits it in the store: from now on the store wins.
    store
        .put(put(Scope::Shared, skill("seeded", "human edit"), None))
        .await
        .unwrap();
    write("v3");
    for _ in 0..2 {
        let acts = skillbase_store::seed::sync_dir(&store, dir.path())
            .await
            .unwrap();
        assert!(
            matches!(&acts[0], skillbase_store::seed::SeedAction::Diverged { .. }),
            "{acts:?}"
        );
    }
    assert_eq!(
        store.index().get(&Scope::Shared, "seeded").unwrap().body,
        "human edit"
    );
    let diverged = store
        .events(&EventFilter {
            kind: Some("seed_diverged".into()),
            ..EventFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(diverged.len(), 1, "recorded once per seed content");
    store.close().await;
    db.cleanup().await;
}

async fn seeding_many_new_skills_lands_the_valid_ones_together(db: TestDb) {
    use skillbase_store::seed::SeedAction;
    let store = db.open().await;
    let dir = tempfile::tempdir().unwrap();
    let mk = |folder: &str, text: &str| {
        let f = dir.path().join(folder);
        std::fs::create_dir_all(&f).unwrap();
        std::fs::write(f.join("SKILL.md"), text).unwrap();
    };
    for i in 0..40 {
        mk(
            &format!("s{i:02}"),
            &format!("---\nname: s{i:02}\ndescription: Seeded skill {i}.\n---\nbody {i}\n"),
        );
    }
    mk("broken", "---\nname: broken\n---\nno description\n");
    let acts = skillbase_store::seed::sync_dir(&store, dir.path())
        .await
        .unwrap();
    let created = acts
        .iter()
        .filter(|a| matches!(a, SeedAction::Created { rev: 1, .. }))
        .count();
    assert_eq!(created, 40, "{acts:?}");
    assert!(
        acts.iter()
            .any(|a| matches!(a, SeedAction::Skipped { path, .. } if path.ends_with("broken"))),
        "{acts:?}"
    );
    let e = store.index().get(&Scope::Shared, "s07").unwrap().clone();
    assert_eq!(e.body, "body 7");
    assert!(e.seed_path.is_some() && e.author.starts_with("seed:"));

    // Two folders claiming one new name: the batch cannot land, so each is tried alone; the
    // first wins, the second is reported, and nothing else is lost.
    let dir2 = tempfile::tempdir().unwrap();
    for (folder, body) in [
        ("a/twin", "first"),
        ("b/twin", "second"),
        ("other-new", "other"),
    ] {
        let f = dir2.path().join(folder);
        std::fs::create_dir_all(&f).unwrap();
        let name = folder.rsplit('/').next().unwrap();
        std::fs::write(
            f.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: A twin.\n---\n{body}\n"),
        )
        .unwrap();
    }
    let acts = skillbase_store::seed::sync_dir(&store, dir2.path())
        .await
        .unwrap();
    assert!(
        matches!(&acts[0], SeedAction::Created { name, .. } if name == "twin"),
        "{acts:?}"
    );
    assert!(matches!(&acts[1], SeedAction::Skipped { .. }), "{acts:?}");
    assert!(
        matches!(&acts[2], SeedAction::Created { name, .. } if name == "other-new"),
        "{acts:?}"
    );
    assert_eq!(
        store.index().get(&Scope::Shared, "twin").unwrap().body,
        "first"
    );
    store.close().await;
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_watcher_applies_changes_within_a_second() {
    let db = TestDb::sqlite();
    let store = Arc::new(db.open().await);
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("watched");
    std::fs::create_dir(&folder).unwrap();
    let write = |body: &str| {
        std::fs::write(
            folder.join("SKILL.md"),
            format!("---\nname: watched\ndescription: Watched skill.\n---\n{body}\n"),
        )
        .unwrap()
    };
    write("v1");
    skillbase_store::seed::sync_dir(&store, dir.path())
        .await
        .unwrap();
    let _w = skillbase_store::seed::SeedWatcher::start(
        store.clone(),
        vec![dir.path().to_path_buf()],
        |_| {},
    )
    .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    write("v2");
    // Generous deadline: the machine is shared; the debounce is 200 ms.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        if store.index().get(&Scope::Shared, "watched").unwrap().body == "v2" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the watcher never applied the change"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A folder deleted while nothing ran: the next sync retires the skill that followed it, with
/// an event by the seed; a skill edited in the store (no longer following) is left alone; a
/// missing seed directory retires nothing; restoring makes the skill follow its folder again.
async fn a_seed_folder_deleted_while_down_retires_its_skill(db: TestDb) {
    use skillbase_store::seed::{SeedAction, sync_dir};
    use skillbase_store::{Status, StatusChange};
    let store = db.open().await;
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, body: &str| {
        let f = dir.path().join(name);
        std::fs::create_dir_all(&f).unwrap();
        std::fs::write(
            f.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: Seeded {name}.\n---\n{body}\n"),
        )
        .unwrap();
    };
    write("kept", "k");
    write("gone", "g");
    write("edited", "e");
    sync_dir(&store, dir.path()).await.unwrap();
    store
        .put(put(Scope::Shared, skill("edited", "the store wins"), None))
        .await
        .unwrap();
    // The server is down: two folders go.
    std::fs::remove_dir_all(dir.path().join("gone")).unwrap();
    std::fs::remove_dir_all(dir.path().join("edited")).unwrap();
    let acts = sync_dir(&store, dir.path()).await.unwrap();
    assert!(
        acts.contains(&SeedAction::Removed {
            name: "gone".into()
        }),
        "{acts:?}"
    );
    assert_eq!(
        acts.iter()
            .filter(|a| matches!(a, SeedAction::Removed { .. }))
            .count(),
        1,
        "{acts:?}"
    );
    let idx = store.index();
    assert_eq!(
        idx.get(&Scope::Shared, "gone").unwrap().status,
        Status::Retired
    );
    assert_eq!(
        idx.get(&Scope::Shared, "edited").unwrap().status,
        Status::Active
    );
    assert_eq!(
        idx.get(&Scope::Shared, "kept").unwrap().status,
        Status::Active
    );
    let retired: Vec<_> = store
        .events(&EventFilter::default())
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == skillbase_store::EventKind::Retired)
        .collect();
    assert_eq!(retired.len(), 1, "{retired:?}");
    assert!(
        retired[0]
            .actor
            .as_deref()
            .is_some_and(|a| a.starts_with("seed:")),
        "{:?}",
        retired[0]
    );
    // Again: nothing more to do, and no second event.
    let acts = sync_dir(&store, dir.path()).await.unwrap();
    assert!(
        !acts.iter().any(|a| matches!(a, SeedAction::Removed { .. })),
        "{acts:?}"
    );
    // A seed directory that is not there (an unmounted disk) is an error, not a deletion.
    let moved = dir.path().with_extension("moved");
    std::fs::rename(dir.path(), &moved).unwrap();
    assert!(sync_dir(&store, dir.path()).await.is_err());
    assert_eq!(
        store.index().get(&Scope::Shared, "kept").unwrap().status,
        Status::Active
    );
    std::fs::rename(&moved, dir.path()).unwrap();
    // Restored, it follows its folder again.
    write("gone", "back");
    store
        .set_status(
            &Scope::Shared,
            "gone",
            StatusChange::Restore,
            &human(),
            serde_json::json!("back"),
        )
        .await
        .unwrap();
    sync_dir(&store, dir.path()).await.unwrap();
    let e = store.index().get(&Scope::Shared, "gone").cloned().unwrap();
    assert_eq!((e.status, e.body.as_str()), (Status::Active, "back"));
    store.close().await;
    db.cleanup().await;
}

/// Wait (up to a generous 10 s: the machine is shared) until `want` holds.
async fn wait_for(want: impl Fn() -> bool, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !want() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Idle means idle: the watcher's own reads of the folders are not changes, so an untouched
/// seed directory is never rescanned; one edit is one sync, then it is idle again. A folder
/// deleted while watching retires its skill.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_seed_watcher_rescans_nothing() {
    use skillbase_store::Status;
    let db = TestDb::sqlite();
    let store = Arc::new(db.open().await);
    let dir = tempfile::tempdir().unwrap();
    for i in 0..40 {
        let f = dir.path().join(format!("idle-{i}"));
        std::fs::create_dir(&f).unwrap();
        std::fs::write(
            f.join("SKILL.md"),
            format!("---\nname: idle-{i}\ndescription: Idle skill {i}.\n---\nbody\n"),
        )
        .unwrap();
        std::fs::write(f.join("notes.txt"), "a second file to read").unwrap();
    }
    skillbase_store::seed::sync_dir(&store, dir.path())
        .await
        .unwrap();
    let w = skillbase_store::seed::SeedWatcher::start(
        store.clone(),
        vec![dir.path().to_path_buf()],
        |_| {},
    )
    .unwrap();
    // Reading the folders (as any sync does) is not a change.
    for i in 0..40 {
        let _ = std::fs::read(dir.path().join(format!("idle-{i}/SKILL.md"))).unwrap();
    }
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(w.syncs(), 0, "rescans without a change");
    std::fs::write(
        dir.path().join("idle-3/SKILL.md"),
        "---\nname: idle-3\ndescription: Idle skill 3.\n---\nchanged\n",
    )
    .unwrap();
    wait_for(
        || store.index().get(&Scope::Shared, "idle-3").unwrap().body == "changed",
        "the watcher never applied the change",
    )
    .await;
    let after_change = w.syncs();
    assert!(after_change >= 1);
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(w.syncs(), after_change, "rescans after the change settled");
    // Deleted while watching: retired.
    std::fs::remove_dir_all(dir.path().join("idle-7")).unwrap();
    wait_for(
        || store.index().get(&Scope::Shared, "idle-7").unwrap().status == Status::Retired,
        "the deleted folder's skill was not retired",
    )
    .await;
    let settled = w.syncs();
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(w.syncs(), settled, "rescans after the deletion settled");
}

suite!(
    a_seed_folder_deleted_while_down_retires_its_skill,
    seeds_follow_until_edited,
    seeding_many_new_skills_lands_the_valid_ones_together,
);
