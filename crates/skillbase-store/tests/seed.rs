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

suite!(
    seeds_follow_until_edited,
    seeding_many_new_skills_lands_the_valid_ones_together,
);
