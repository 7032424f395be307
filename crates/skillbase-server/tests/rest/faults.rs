//! A store whose files turn unwritable under a running server (issue 35): `chattr +i` on the
//! SQLite file, its `-wal` and its `-shm`, the stand-in for a file system remounted read-only
//! after an I/O error. Reads and turns keep answering; writes fail at once with a 503 that
//! names the file and the reason; once the files can be written again, writes work without a
//! restart; nothing acknowledged is lost. Skipped, with a line on stderr, where `chattr` cannot
//! run (not root, or a file system without attributes).

use super::*;
use skillbase_store::Store;
use std::path::PathBuf;

/// Files made immutable, made mutable again on drop (also when the test fails).
struct Immutable(Vec<PathBuf>);

impl Immutable {
    fn set(test: &str, files: Vec<PathBuf>) -> Option<Immutable> {
        let out = std::process::Command::new("chattr")
            .arg("+i")
            .args(&files)
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Immutable(files)),
            Ok(o) => {
                let _ = std::process::Command::new("chattr")
                    .arg("-i")
                    .args(&files)
                    .output();
                eprintln!(
                    "skipped {test}: chattr +i failed ({}); run as root on a file system with attributes (ext4, xfs, btrfs)",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("skipped {test}: cannot run chattr ({e})");
                None
            }
        }
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let ok = std::process::Command::new("chattr")
            .arg("-i")
            .args(&self.0)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok || std::thread::panicking(), "chattr -i failed");
    }
}

fn skill_body(name: &str) -> Value {
    json!({"files": {"SKILL.md": skill_md(name, &format!("The {name} skill"), "Do it.")}})
}

/// A request that must not hang: a store fault is answered at once, not after a lock timeout.
async fn answered(r: reqwest::RequestBuilder) -> reqwest::Response {
    tokio::time::timeout(Duration::from_secs(20), r.send())
        .await
        .expect("no answer within 20 s: the request hung")
        .unwrap()
}

#[tokio::test]
async fn a_store_whose_files_turn_unwritable_keeps_serving_and_recovers() {
    let s = TestServer::start().await;
    // Before the fault: a session, and a write that was acknowledged.
    ok_json(
        answered(
            s.post("/v1/sessions", &s.alpha)
                .json(&json!({"id": "before"})),
        )
        .await,
        201,
    )
    .await;
    ok_json(
        answered(
            s.put("/v1/skills/acked", &s.admin)
                .json(&skill_body("acked")),
        )
        .await,
        201,
    )
    .await;
    let files: Vec<PathBuf> = ["", "-wal", "-shm"]
        .iter()
        .map(|x| PathBuf::from(format!("{}{x}", s.db.display())))
        .filter(|p| p.exists())
        .collect();
    assert!(files.len() >= 2, "{files:?}");
    let Some(fault) = Immutable::set(
        "a_store_whose_files_turn_unwritable_keeps_serving_and_recovers",
        files,
    ) else {
        s.stop().await;
        return;
    };

    // Reads answer, many at once (so the pool opens connections while the files are
    // unwritable: SQLite opens those read-only).
    let reads = (0..24).map(|i| {
        let path = match i % 3 {
            0 => "/v1/skills".to_owned(),
            1 => "/v1/skills/acked".to_owned(),
            _ => "/v1/skills/shared-one/export".to_owned(),
        };
        let r = s.get(&path, &s.admin);
        async move { (path, answered(r).await.status()) }
    });
    for (path, status) in futures_util::future::join_all(reads).await {
        assert_eq!(status, 200, "GET {path}");
    }
    let history = ok_json(
        answered(s.get("/v1/skills/acked/history", &s.admin)).await,
        200,
    )
    .await;
    assert!(history.to_string().contains("\"rev\":1"), "{history}");
    // A turn in a session the server holds answers.
    let turn = ok_json(
        answered(
            s.post("/v1/sessions/before/turns", &s.alpha)
                .json(&json!({"message": "shared one please"})),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(turn["session"], "before", "{turn}");

    // Writes fail at once, with a 503 naming the file and why.
    for _ in 0..3 {
        let (st, p) = problem(
            answered(
                s.put("/v1/skills/during", &s.admin)
                    .json(&skill_body("during")),
            )
            .await,
        )
        .await;
        assert_eq!(st, 503, "{p}");
        let detail = p["detail"].as_str().unwrap();
        assert!(detail.contains("skillbase.db"), "{detail}");
        assert!(detail.contains("cannot write"), "{detail}");
        assert!(detail.contains("writable again"), "{detail}");
    }
    let (st, p) = problem(
        answered(
            s.post("/v1/sessions", &s.alpha)
                .json(&json!({"id": "during"})),
        )
        .await,
    )
    .await;
    assert_eq!(st, 503, "{p}");

    // Writable again: writes work at once, without a restart.
    drop(fault);
    ok_json(
        answered(
            s.put("/v1/skills/after", &s.admin)
                .json(&skill_body("after")),
        )
        .await,
        201,
    )
    .await;
    ok_json(
        answered(
            s.post("/v1/sessions", &s.alpha)
                .json(&json!({"id": "after"})),
        )
        .await,
        201,
    )
    .await;
    for _ in 0..8 {
        let r = answered(s.post("/v1/skills/after/disable", &s.admin)).await;
        assert!(r.status().is_success(), "{}", r.status());
        let r = answered(s.post("/v1/skills/after/enable", &s.admin)).await;
        assert!(r.status().is_success(), "{}", r.status());
    }

    // Nothing acknowledged is lost, and nothing refused was written: read from disk afresh.
    let store = Store::open(&s.url).await.unwrap();
    let shared = |name: &str| store.index().get(&Scope::Shared, name).is_some();
    assert!(shared("acked") && shared("after"));
    assert!(!shared("during"));
    let alpha = AgentName::parse("alpha").unwrap();
    for id in ["before", "after"] {
        assert!(store.session(&alpha, id).await.unwrap().is_some(), "{id}");
    }
    assert!(store.session(&alpha, "during").await.unwrap().is_none());
    store.close().await;
    s.stop().await;
}
