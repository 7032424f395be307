//! The store suite, run against SQLite and against PostgreSQL (when
//! `SKILLBASE_TEST_POSTGRES_URL` is set; otherwise the PostgreSQL copies are reported ignored).

mod common;

use common::{TestDb, skill, skill_with};
use skillbase_format::Bundle;
use skillbase_store::{
    AgentConfig, AgentName, Author, EventFilter, NameSet, PutRequest, Scope, Status, StatusChange,
    Store, StoreError, WriteKind,
};
use std::sync::Arc;

fn human() -> Author {
    Author::Human("ana".into())
}

fn put(scope: Scope, bundle: Bundle, expect: Option<i64>) -> PutRequest {
    PutRequest {
        scope,
        bundle,
        author: human(),
        message: "edit".into(),
        expect_rev: expect,
    }
}

fn agent(n: &str) -> AgentName {
    AgentName::parse(n).unwrap()
}

async fn revisions_and_revert(db: TestDb) {
    let store = db.open().await;
    let o = store
        .put(put(Scope::Shared, skill("alpha", "v1"), None))
        .await
        .unwrap();
    assert_eq!((o.kind.clone(), o.rev), (WriteKind::Created, 1));
    let o = store
        .put(put(Scope::Shared, skill("alpha", "v2"), None))
        .await
        .unwrap();
    assert_eq!((o.kind.clone(), o.rev), (WriteKind::Modified, 2));
    // Same bundle again: a no-op, not a revision.
    let o = store
        .put(put(Scope::Shared, skill("alpha", "v2"), None))
        .await
        .unwrap();
    assert_eq!((o.kind.clone(), o.rev), (WriteKind::Unchanged, 2));

    let idx = store.index();
    let e = idx.get(&Scope::Shared, "alpha").unwrap();
    assert_eq!(e.active_rev, 2);
    assert_eq!(e.body, "v2");

    let o = store
        .revert(&Scope::Shared, "alpha", 1, &human())
        .await
        .unwrap();
    assert_eq!((o.kind.clone(), o.rev), (WriteKind::Reverted, 1));
    assert_eq!(
        store.index().get(&Scope::Shared, "alpha").unwrap().body,
        "v1"
    );
    let h = store.history(&Scope::Shared, "alpha").await.unwrap();
    assert_eq!(h.len(), 2, "revert never rewrites history");
    assert!(h[0].active && !h[1].active);
    assert_eq!(h[0].author, "human:ana");

    // Modify after a revert appends revision 3.
    let o = store
        .put(put(Scope::Shared, skill("alpha", "v3"), None))
        .await
        .unwrap();
    assert_eq!(o.rev, 3);

    let (info, b) = store
        .bundle(&Scope::Shared, "alpha", Some(2))
        .await
        .unwrap();
    assert_eq!(info.rev, 2);
    assert_eq!(b.digest(), skill("alpha", "v2").digest());

    let d = store.diff(&Scope::Shared, "alpha", 1, 3).await.unwrap();
    assert!(d.contains("-v1") && d.contains("+v3"), "{d}");
    assert!(d.contains("a/SKILL.md"), "{d}");

    assert!(matches!(
        store.revert(&Scope::Shared, "alpha", 9, &human()).await,
        Err(StoreError::NoSuchRevision { latest: 3, .. })
    ));
    let kinds: Vec<String> = store
        .events(&EventFilter::default())
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds,
        [
            "revision_written",
            "revision_written",
            "reverted",
            "revision_written"
        ]
    );
    store.close().await;
    db.cleanup().await;
}

async fn conflict_changes_nothing(db: TestDb) {
    let store = db.open().await;
    store
        .put(put(Scope::Shared, skill("beta", "v1"), None))
        .await
        .unwrap();
    let mut winner = put(Scope::Shared, skill("beta", "v2"), Some(1));
    winner.author = Author::Human("bo".into());
    store.put(winner).await.unwrap();
    let err = store
        .put(put(Scope::Shared, skill("beta", "v3"), Some(1)))
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, StoreError::Conflict { actual: 2, .. }),
        "{msg}"
    );
    assert!(msg.contains("human:bo"), "says who won: {msg}");
    assert_eq!(
        store.history(&Scope::Shared, "beta").await.unwrap().len(),
        2
    );
    assert_eq!(
        store.index().get(&Scope::Shared, "beta").unwrap().body,
        "v2"
    );
    // expect_rev 0 means "must not exist".
    assert!(
        store
            .put(put(Scope::Shared, skill("beta", "x"), Some(0)))
            .await
            .is_err()
    );
    store.close().await;
    db.cleanup().await;
}

async fn statuses(db: TestDb) {
    let store = db.open().await;
    store
        .put(put(Scope::Shared, skill("gamma", "v1"), None))
        .await
        .unwrap();
    for (to, expect) in [
        (StatusChange::Disable, Status::Disabled),
        (StatusChange::Enable, Status::Active),
        (StatusChange::Retire, Status::Retired),
    ] {
        let o = store
            .set_status(
                &Scope::Shared,
                "gamma",
                to,
                &human(),
                serde_json::Value::Null,
            )
            .await
            .unwrap();
        assert_eq!(o.status, expect);
        assert_eq!(
            store.index().get(&Scope::Shared, "gamma").unwrap().status,
            expect
        );
    }
    // Retired keeps every revision but refuses writes until restored.
    assert!(matches!(
        store
            .put(put(Scope::Shared, skill("gamma", "v2"), None))
            .await,
        Err(StoreError::Retired { .. })
    ));
    assert_eq!(
        store.history(&Scope::Shared, "gamma").await.unwrap().len(),
        1
    );
    store
        .set_status(
            &Scope::Shared,
            "gamma",
            StatusChange::Restore,
            &human(),
            serde_json::Value::Null,
        )
        .await
        .unwrap();
    store
        .put(put(Scope::Shared, skill("gamma", "v2"), None))
        .await
        .unwrap();
    let kinds: Vec<String> = store
        .events(&EventFilter {
            skill: Some("gamma".into()),
            ..EventFilter::default()
        })
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds,
        [
            "revision_written",
            "disabled",
            "enabled",
            "retired",
            "restored",
            "revision_written"
        ]
    );
    assert!(matches!(
        store
            .set_status(
                &Scope::Shared,
                "nope",
                StatusChange::Retire,
                &human(),
                serde_json::Value::Null
            )
            .await,
        Err(StoreError::NotFound { .. })
    ));
    store.close().await;
    db.cleanup().await;
}

async fn scopes_and_agents(db: TestDb) {
    let store = db.open().await;
    let a = agent("support");
    store
        .put(put(Scope::Shared, skill("refund", "shared body"), None))
        .await
        .unwrap();
    store
        .put(put(Scope::Shared, skill("faq", "faq body"), None))
        .await
        .unwrap();
    store
        .put(put(
            Scope::Agent(a.clone()),
            skill("refund", "support override"),
            None,
        ))
        .await
        .unwrap();
    store
        .put(put(
            Scope::Agent(agent("sales")),
            skill("pitch", "private"),
            None,
        ))
        .await
        .unwrap();
    let idx = store.index();
    assert_eq!(idx.resolve(&a, "refund").unwrap().body, "support override");
    assert_eq!(
        idx.resolve(&agent("other"), "refund").unwrap().body,
        "shared body"
    );
    assert!(
        idx.resolve(&a, "pitch").is_none(),
        "agent-private skills stay private"
    );
    let names: Vec<&str> = idx
        .resolved_for(&a)
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(names, ["faq", "refund"]);

    let mut config = AgentConfig {
        skills: NameSet::Names(vec!["refund".parse().unwrap()]),
        ..AgentConfig::default()
    };
    assert_eq!(store.create_agent(&a, &config).await.unwrap(), 1);
    assert!(matches!(
        store.create_agent(&a, &config).await,
        Err(StoreError::AgentExists(_))
    ));
    config.catalog_budget = 100;
    assert_eq!(store.set_agent(&a, &config).await.unwrap(), 2);
    let got = store.agent(&a).await.unwrap().unwrap();
    assert_eq!(got.config.catalog_budget, 100);
    assert_eq!(got.version, 2);
    assert!(store.agent(&agent("ghost")).await.unwrap().is_none());
    store.close().await;
    db.cleanup().await;
}

async fn import_is_all_or_nothing(db: TestDb) {
    let store = db.open().await;
    let a = agent("support");
    store
        .create_agent(
            &agent("other"),
            &AgentConfig {
                skills: NameSet::All,
                ..AgentConfig::default()
            },
        )
        .await
        .unwrap();
    let good: Vec<Bundle> = (0..20).map(|i| skill(&format!("s{i}"), "body")).collect();
    let mut with_bad = good.clone();
    with_bad.push(Bundle::single("---\nname: Bad Name\ndescription: x\n---\n").unwrap());
    assert!(
        store
            .import(
                &Scope::Shared,
                with_bad,
                &Author::Import("t".into()),
                "import",
                &|_| {}
            )
            .await
            .is_err()
    );
    assert!(store.index().is_empty(), "a failed import lands nothing");

    // A duplicate name inside one import is refused.
    let dup = vec![skill("d", "1"), skill("d", "2")];
    assert!(
        store
            .import(
                &Scope::Shared,
                dup,
                &Author::Import("t".into()),
                "i",
                &|_| {}
            )
            .await
            .is_err()
    );

    let r = store
        .import(
            &Scope::Agent(a.clone()),
            good.clone(),
            &Author::Import("pack".into()),
            "import",
            &|_| {},
        )
        .await
        .unwrap();
    assert_eq!(r.created.len(), 20);
    let cfg = store.agent(&a).await.unwrap().unwrap().config;
    match cfg.skills {
        NameSet::Names(n) => assert_eq!(n.len(), 20),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        store
            .agent(&agent("other"))
            .await
            .unwrap()
            .unwrap()
            .config
            .skills,
        NameSet::All
    );
    assert_eq!(store.index().scope(&Scope::Shared).count(), 0);

    let mut again = good;
    again[0] = skill("s0", "changed");
    let r = store
        .import(
            &Scope::Agent(a.clone()),
            again,
            &Author::Import("pack".into()),
            "import",
            &|_| {},
        )
        .await
        .unwrap();
    assert_eq!(
        (r.created.len(), r.changed.len(), r.unchanged.len()),
        (0, 1, 19)
    );
    store.close().await;
    db.cleanup().await;
}

async fn concurrent_writers(db: TestDb) {
    let store = Arc::new(db.open().await);
    store
        .put(put(Scope::Shared, skill("hot", "v0"), None))
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for i in 0..16 {
        let s = store.clone();
        tasks.push(tokio::spawn(async move {
            s.put(put(
                Scope::Shared,
                skill("hot", &format!("writer {i}")),
                None,
            ))
            .await
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let h = store.history(&Scope::Shared, "hot").await.unwrap();
    let revs: Vec<i64> = h.iter().map(|r| r.rev).collect();
    assert_eq!(
        revs,
        (1..=17).collect::<Vec<_>>(),
        "gap-free revision numbers"
    );
    let mut digests: Vec<&str> = h.iter().map(|r| r.digest.as_str()).collect();
    digests.sort();
    digests.dedup();
    assert_eq!(digests.len(), 17, "no write lost");
    assert_eq!(
        store.index().get(&Scope::Shared, "hot").unwrap().active_rev,
        17
    );
    store.close().await;
    db.cleanup().await;
}

async fn concurrent_creators(db: TestDb) {
    let store = Arc::new(db.open().await);
    let mut tasks = Vec::new();
    for i in 0..8 {
        let s = store.clone();
        tasks.push(tokio::spawn(async move {
            s.put(put(
                Scope::Shared,
                skill("fresh", &format!("creator {i}")),
                None,
            ))
            .await
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let revs: Vec<i64> = store
        .history(&Scope::Shared, "fresh")
        .await
        .unwrap()
        .iter()
        .map(|r| r.rev)
        .collect();
    assert_eq!(revs, (1..=8).collect::<Vec<_>>());
    store.close().await;
    db.cleanup().await;
}

async fn reopen_and_other_writers(db: TestDb) {
    let a = db.open().await;
    let b = db.open().await;
    a.put(put(Scope::Shared, skill("shared-one", "v1"), None))
        .await
        .unwrap();
    assert!(b.index().get(&Scope::Shared, "shared-one").is_none());
    assert_eq!(b.sync_changes().await.unwrap(), 1);
    assert_eq!(
        b.index().get(&Scope::Shared, "shared-one").unwrap().body,
        "v1"
    );
    // The runtime's own events (calls, activations) are not read back: a busy server's
    // ten thousand calls do not make the other process reload its index.
    let calls: Vec<skillbase_store::NewEvent> = (0..10_050)
        .map(|i| skillbase_store::NewEvent {
            kind: if i % 2 == 0 {
                "tool_called"
            } else {
                "skill_activated"
            }
            .into(),
            scope: Some("shared".into()),
            skill: Some("shared-one".into()),
            session: Some("busy".into()),
            ..Default::default()
        })
        .collect();
    a.put(put(Scope::Shared, skill("bystander", "v1"), None))
        .await
        .unwrap();
    assert_eq!(b.sync_changes().await.unwrap(), 1);
    a.append_events(&calls).await.unwrap();
    a.put(put(Scope::Shared, skill("shared-one", "v2"), None))
        .await
        .unwrap();
    // One record refreshed (a reload would report the whole index, two records).
    assert_eq!(b.sync_changes().await.unwrap(), 1);
    assert_eq!(
        b.index().get(&Scope::Shared, "shared-one").unwrap().body,
        "v2"
    );
    // Nothing new: nothing refreshed.
    a.append_events(&calls[..10]).await.unwrap();
    assert_eq!(b.sync_changes().await.unwrap(), 0);
    a.close().await;
    b.close().await;
    let c = db.open().await;
    assert_eq!(
        c.index()
            .get(&Scope::Shared, "shared-one")
            .unwrap()
            .active_rev,
        2
    );
    c.close().await;
    db.cleanup().await;
}

async fn invalid_skills_are_refused(db: TestDb) {
    let store = db.open().await;
    let bad =
        Bundle::single("---\nname: ok-name\ndescription: d\ntriggers: nope\n---\nbody\n").unwrap();
    let e = store.put(put(Scope::Shared, bad, None)).await.unwrap_err();
    assert!(e.to_string().contains("triggers"), "{e}");
    let bad = Bundle::single(vec![0xff, 0xfe]).unwrap();
    assert!(store.put(put(Scope::Shared, bad, None)).await.is_err());
    // One message rule for every surface, checked by the store itself.
    let good = Bundle::single("---\nname: ok-name\ndescription: d\n---\nbody\n").unwrap();
    for message in ["x".repeat(2001), "a\u{1b}[2Jb".to_owned()] {
        let mut req = put(Scope::Shared, good.clone(), None);
        req.message = message;
        let e = store.put(req).await.unwrap_err();
        assert!(e.to_string().contains("at most 2000 characters"), "{e}");
    }
    let e = store
        .import(
            &Scope::Shared,
            vec![good],
            &human(),
            &"y".repeat(2001),
            &|_| {},
        )
        .await
        .unwrap_err();
    assert!(e.to_string().contains("revision message"), "{e}");
    assert!(store.index().is_empty());
    assert!(
        store
            .events(&EventFilter::default())
            .await
            .unwrap()
            .is_empty()
    );
    let with_files = Bundle::from_pairs(
        [
            (
                "SKILL.md",
                b"---\nname: files\ndescription: d\n---\nsee scripts/run.sh\n".to_vec(),
            ),
            ("scripts/run.sh", b"#!/bin/sh\necho hi\n".to_vec()),
        ],
        &Default::default(),
    )
    .unwrap();
    store
        .put(put(Scope::Shared, with_files.clone(), None))
        .await
        .unwrap();
    let e = store.index().get(&Scope::Shared, "files").unwrap().clone();
    assert_eq!(e.files.len(), 2);
    let (_, back) = store.bundle(&Scope::Shared, "files", None).await.unwrap();
    assert_eq!(back.digest(), with_files.digest());
    store.close().await;
    db.cleanup().await;
}

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

async fn history_is_append_only(db: TestDb) {
    let store = db.open().await;
    store
        .put(put(Scope::Shared, skill("fixed", "v1"), None))
        .await
        .unwrap();
    store.close().await;
    match &db.url {
        skillbase_store::DbUrl::Sqlite(path) => {
            use sqlx::Connection;
            let mut c = sqlx::SqliteConnection::connect(&format!("sqlite:{}", path.display()))
                .await
                .unwrap();
            assert!(
                sqlx::query("DELETE FROM events")
                    .execute(&mut c)
                    .await
                    .is_err()
            );
            assert!(
                sqlx::query("UPDATE revisions SET author = 'x'")
                    .execute(&mut c)
                    .await
                    .is_err()
            );
            assert!(
                sqlx::query("DELETE FROM revisions")
                    .execute(&mut c)
                    .await
                    .is_err()
            );
            // A database from a newer Skillbase is refused, not corrupted.
            sqlx::query("INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (999, 'future', 1, x'00', 0)")
                .execute(&mut c)
                .await
                .unwrap();
        }
        skillbase_store::DbUrl::Postgres { url, schema } => {
            use sqlx::Connection;
            let mut c = sqlx::PgConnection::connect(url).await.unwrap();
            let s = schema.clone().unwrap();
            assert!(
                sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM {s}.events")))
                    .execute(&mut c)
                    .await
                    .is_err()
            );
            assert!(
                sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM {s}.revisions")))
                    .execute(&mut c)
                    .await
                    .is_err()
            );
            sqlx::query(sqlx::AssertSqlSafe(format!("INSERT INTO {s}._sqlx_migrations (version, description, success, checksum, execution_time) VALUES (999, 'future', true, '\\x00', 0)")))
                .execute(&mut c)
                .await
                .unwrap();
        }
    }
    match Store::open(&db.url).await {
        Err(e @ StoreError::SchemaTooNew { .. }) => {
            assert!(e.to_string().contains("newer Skillbase"), "{e}")
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a newer schema must be refused"),
    }
    db.cleanup().await;
}

async fn bulk_import_is_the_same_as_single_writes(db: TestDb) {
    let store = db.open().await;
    // Some records exist before the import: one unchanged, one changed, one retired elsewhere.
    store
        .put(put(Scope::Shared, skill("b000", "body 0"), None))
        .await
        .unwrap();
    store
        .put(put(Scope::Shared, skill("b001", "old"), None))
        .await
        .unwrap();
    store
        .put(put(Scope::Shared, skill("b001", "older"), None))
        .await
        .unwrap();
    let mut pack: Vec<Bundle> = (0..100)
        .map(|i| skill(&format!("b{i:03}"), &format!("body {i}")))
        .collect();
    // Shared files across skills are stored once.
    pack.push(
        Bundle::from_pairs(
            [
                (
                    "SKILL.md",
                    b"---\nname: with-files\ndescription: d\n---\nx\n".to_vec(),
                ),
                ("scripts/run.sh", b"echo 0\n".to_vec()),
            ],
            &Default::default(),
        )
        .unwrap(),
    );
    let r = store
        .import(
            &Scope::Shared,
            pack.clone(),
            &Author::Import("bulk".into()),
            "bulk",
            &|_| {},
        )
        .await
        .unwrap();
    assert_eq!(
        (r.created.len(), r.changed.len(), r.unchanged.len()),
        (99, 1, 1),
        "{r:?}"
    );
    let o = r.outcomes.iter().find(|o| o.name == "b001").unwrap();
    assert_eq!(o.rev, 3, "the changed skill gets the next revision");
    let idx = store.index();
    assert_eq!(idx.get(&Scope::Shared, "b001").unwrap().body, "body 1");
    assert_eq!(idx.get(&Scope::Shared, "b050").unwrap().active_rev, 1);
    assert_eq!(
        idx.get(&Scope::Shared, "with-files").unwrap().files.len(),
        2
    );
    let (_, b) = store
        .bundle(&Scope::Shared, "with-files", None)
        .await
        .unwrap();
    assert_eq!(b.digest(), pack[100].digest());
    let h = store.history(&Scope::Shared, "b001").await.unwrap();
    assert_eq!(h.iter().map(|r| r.rev).collect::<Vec<_>>(), [1, 2, 3]);
    let written = store
        .events(&EventFilter {
            kind: Some("revision_written".into()),
            ..EventFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(written.len(), 3 + 100, "one event per revision written");
    // The same import again changes nothing.
    let r = store
        .import(
            &Scope::Shared,
            pack.clone(),
            &Author::Import("bulk".into()),
            "bulk",
            &|_| {},
        )
        .await
        .unwrap();
    assert_eq!(r.unchanged.len(), 101);
    // A retired record in the pack refuses the whole import.
    store
        .set_status(
            &Scope::Shared,
            "b010",
            StatusChange::Retire,
            &human(),
            serde_json::Value::Null,
        )
        .await
        .unwrap();
    let mut again = pack;
    again[10] = skill("b010", "changed while retired");
    again[20] = skill("b020", "changed too");
    assert!(matches!(
        store
            .import(
                &Scope::Shared,
                again,
                &Author::Import("bulk".into()),
                "bulk",
                &|_| {}
            )
            .await,
        Err(StoreError::Retired { .. })
    ));
    assert_eq!(
        store.index().get(&Scope::Shared, "b020").unwrap().body,
        "body 20"
    );
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

async fn many_events_append_in_order(db: TestDb) {
    let store = db.open().await;
    let evs: Vec<skillbase_store::NewEvent> = (0..250)
        .map(|i| skillbase_store::NewEvent {
            kind: "test".into(),
            session: Some(format!("s{}", i % 3)),
            rev: (i % 2 == 0).then_some(i),
            data: serde_json::json!({"i": i, "text": "it's \"quoted\""}),
            ..Default::default()
        })
        .collect();
    store.append_events(&evs).await.unwrap();
    store.append_events(&[]).await.unwrap();
    let back = store
        .events(&skillbase_store::EventFilter {
            kind: Some("test".into()),
            limit: Some(1000),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(back.len(), 250);
    let mut ids: Vec<i64> = back.iter().map(|e| e.id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 250);
    let mut by_id = back.clone();
    by_id.sort_by_key(|e| e.id);
    for (i, e) in by_id.iter().enumerate() {
        assert_eq!(e.data["i"], i as i64);
        assert_eq!(e.data["text"], "it's \"quoted\"");
        assert_eq!(e.session.as_deref(), Some(format!("s{}", i % 3).as_str()));
        assert_eq!(e.rev, (i % 2 == 0).then_some(i as i64));
    }
    store.close().await;
    db.cleanup().await;
}

async fn run_counts_commit_with_their_events(db: TestDb) {
    let store = db.open().await;
    store
        .put(put(Scope::Shared, skill("counted", "v1"), None))
        .await
        .unwrap();
    let agent = AgentName::parse("counter").unwrap();
    store
        .create_agent(&agent, &AgentConfig::default())
        .await
        .unwrap();
    let entry = store
        .index()
        .get(&Scope::Shared, "counted")
        .unwrap()
        .clone();
    let mut runs = Vec::new();
    for session in ["s1", "s2"] {
        store.open_session(session, &agent).await.unwrap();
        runs.push(store.start_run(session, &agent, &entry).await.unwrap());
    }
    let ev = skillbase_store::NewEvent {
        kind: "tool_called".into(),
        ..Default::default()
    };
    store
        .append_events_and_count(&[ev.clone(), ev], &[(runs[0], 3), (runs[1], 1)])
        .await
        .unwrap();
    // Counts alone (no events) are written too; an unknown run changes nothing.
    store
        .append_events_and_count(&[], &[(runs[0], 2), (i64::MAX, 5)])
        .await
        .unwrap();
    store.count_call(runs[1], true).await.unwrap();
    let got = store.runs(&Scope::Shared, "counted", 10).await.unwrap();
    let by = |id: i64| got.iter().find(|r| r.id == id).unwrap();
    assert_eq!((by(runs[0]).calls, by(runs[0]).failed_calls), (5, 0));
    assert_eq!((by(runs[1]).calls, by(runs[1]).failed_calls), (2, 1));
    let evs = store
        .events(&skillbase_store::EventFilter {
            kind: Some("tool_called".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(evs.len(), 2);
    store.close().await;
    db.cleanup().await;
}

async fn status_changes_honour_the_expected_revision(db: TestDb) {
    let store = db.open().await;
    for v in ["v1", "v2"] {
        store
            .put(put(Scope::Shared, skill("delta", v), None))
            .await
            .unwrap();
    }
    let e = store
        .set_status_if(
            &Scope::Shared,
            "delta",
            StatusChange::Disable,
            &human(),
            serde_json::Value::Null,
            Some(1),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            StoreError::Conflict {
                expected: 1,
                actual: 2,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(
        store.index().get(&Scope::Shared, "delta").unwrap().status,
        Status::Active,
        "a refused status change changes nothing"
    );
    let o = store
        .set_status_if(
            &Scope::Shared,
            "delta",
            StatusChange::Disable,
            &human(),
            serde_json::Value::Null,
            Some(2),
        )
        .await
        .unwrap();
    assert_eq!(o.status, Status::Disabled);
    store.close().await;
    db.cleanup().await;
}

async fn activations_and_their_events_commit_together(db: TestDb) {
    let store = db.open().await;
    let agent = skillbase_store::AgentName::parse("ops").unwrap();
    store
        .create_agent(&agent, &skillbase_store::AgentConfig::default())
        .await
        .unwrap();
    store.open_session("s1", &agent).await.unwrap();
    let acts: Vec<skillbase_store::ActivationRecord> = ["main", "helper"]
        .iter()
        .enumerate()
        .map(|(i, n)| skillbase_store::ActivationRecord {
            scope: "shared".into(),
            skill: (*n).into(),
            rev: 1,
            reason: if i == 0 {
                "load".into()
            } else {
                "companion:main".into()
            },
            at: 1_000 + i as i64,
            // The load's arguments are kept with its activation (a companion has none).
            arguments: (i == 0).then(|| r#"{"q":"the question"}"#.to_owned()),
        })
        .collect();
    let evs = vec![skillbase_store::NewEvent {
        kind: "skill_activated".into(),
        session: Some("s1".into()),
        ..Default::default()
    }];
    store.record_activations("s1", &acts, &evs).await.unwrap();
    let rec = store.session("s1").await.unwrap().unwrap();
    assert_eq!(rec.activations, acts);
    let back = store
        .events(&skillbase_store::EventFilter {
            session: Some("s1".into()),
            kind: Some("skill_activated".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(back.len(), 1);
    // An unknown session: the activations' foreign key refuses, and no event lands either.
    let before = store.events(&Default::default()).await.unwrap().len();
    assert!(
        store
            .record_activations("ghost", &acts, &evs)
            .await
            .is_err()
    );
    assert_eq!(
        store.events(&Default::default()).await.unwrap().len(),
        before
    );
    store.close().await;
    db.cleanup().await;
}

macro_rules! suite {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::TestDb::sqlite()).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[cfg_attr(not(skillbase_pg), ignore = "PostgreSQL tests skipped: set SKILLBASE_TEST_POSTGRES_URL to run them")]
                async fn $name() {
                    super::$name(super::TestDb::postgres()).await;
                }
            )*
        }
    };
}

suite!(
    revisions_and_revert,
    conflict_changes_nothing,
    statuses,
    scopes_and_agents,
    import_is_all_or_nothing,
    concurrent_writers,
    concurrent_creators,
    reopen_and_other_writers,
    invalid_skills_are_refused,
    seeds_follow_until_edited,
    history_is_append_only,
    bulk_import_is_the_same_as_single_writes,
    seeding_many_new_skills_lands_the_valid_ones_together,
    many_events_append_in_order,
    run_counts_commit_with_their_events,
    status_changes_honour_the_expected_revision,
    activations_and_their_events_commit_together,
);

/// PostgreSQL hands out event ids before commit: a write that took its id first and commits
/// after a newer one has been seen still reaches the other servers (SQLite has one writer at a
/// time, so ids commit in order there).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(skillbase_pg),
    ignore = "PostgreSQL tests skipped: set SKILLBASE_TEST_POSTGRES_URL to run them"
)]
async fn a_write_committed_after_a_newer_one_still_reaches_other_servers_postgres() {
    use sqlx::{Acquire, Connection};
    let db = TestDb::postgres();
    let a = db.open().await;
    let b = db.open().await;
    for name in ["late", "other"] {
        a.put(put(Scope::Shared, skill(name, "v1"), None))
            .await
            .unwrap();
    }
    b.sync_changes().await.unwrap();
    assert_eq!(
        b.index().get(&Scope::Shared, "late").unwrap().status,
        Status::Active
    );
    let skillbase_store::DbUrl::Postgres {
        url,
        schema: Some(schema),
    } = &db.url
    else {
        unreachable!("a PostgreSQL test database")
    };
    let mut c = sqlx::PgConnection::connect(url).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("SET search_path TO {schema}")))
        .execute(&mut c)
        .await
        .unwrap();
    // The slow writer takes its event id now...
    let mut tx = sqlx::Connection::begin(&mut c).await.unwrap();
    let conn = tx.acquire().await.unwrap();
    sqlx::query("UPDATE skills SET status = 'retired' WHERE scope = 'shared' AND name = 'late'")
        .execute(&mut *conn)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO events (at, kind, scope, skill, data) VALUES (0, 'retired', 'shared', 'late', '{}')",
    )
    .execute(&mut *conn)
    .await
    .unwrap();
    // ...a newer write commits and is seen...
    a.put(put(Scope::Shared, skill("other", "v2"), None))
        .await
        .unwrap();
    assert_eq!(b.sync_changes().await.unwrap(), 1);
    assert_eq!(
        b.index().get(&Scope::Shared, "late").unwrap().status,
        Status::Active
    );
    // ...and the slow one commits: the next sync still applies it, once.
    tx.commit().await.unwrap();
    assert_eq!(b.sync_changes().await.unwrap(), 1);
    assert_eq!(
        b.index().get(&Scope::Shared, "late").unwrap().status,
        Status::Retired
    );
    assert_eq!(b.sync_changes().await.unwrap(), 0);
    a.close().await;
    b.close().await;
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
    let _ = skill_with;
}
