//! Bad input, a database of a newer schema, JSON outputs and the database URL forms.

use super::*;

/// Bad input: the right exit code and a message that says what is wrong.
pub(super) fn bad_input(sb: &Sb) {
    let work = sb.path("work");
    let alpha = write_skill(&work, "alpha", "v1");
    sb.ok(&["put", s(&alpha)]);
    let before = sb.list(&[]);

    // Missing paths: exit 2.
    let missing = sb.path("missing");
    for args in [vec!["put", s(&missing)], vec!["import", s(&missing)]] {
        let err = sb.fails(2, &args);
        assert!(err.contains("does not exist"), "{args:?}: {err}");
    }
    // Invalid skills: exit 1 with the problem.
    let nodesc = work.join("nodesc");
    std::fs::create_dir_all(&nodesc).unwrap();
    std::fs::write(nodesc.join("SKILL.md"), "---\nname: nodesc\n---\nbody\n").unwrap();
    let err = sb.fails(1, &["put", s(&nodesc)]);
    assert!(
        err.contains("invalid skill") && err.contains("description"),
        "{err}"
    );
    let wrong = write_skill(&sb.path("w"), "alpha", "x");
    let renamed = sb.path("w/not-alpha");
    std::fs::rename(&wrong, &renamed).unwrap();
    let err = sb.fails(1, &["put", s(&renamed)]);
    assert!(err.contains("not-alpha") && err.contains("alpha"), "{err}");
    let nofm = work.join("nofm");
    std::fs::create_dir_all(&nofm).unwrap();
    std::fs::write(nofm.join("SKILL.md"), "just text\n").unwrap();
    let err = sb.fails(1, &["put", s(&nofm)]);
    assert!(err.contains("frontmatter"), "{err}");
    // One bad skill fails a whole import: nothing lands.
    let err = sb.fails(1, &["import", s(&work)]);
    assert!(err.contains("invalid skill"), "{err}");
    let empty = sb.path("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let err = sb.fails(1, &["import", s(&empty)]);
    assert!(err.contains("no skill found"), "{err}");
    let junk = sb.path("junk.zip");
    std::fs::write(&junk, b"not a zip").unwrap();
    let err = sb.fails(1, &["import", s(&junk)]);
    assert!(err.contains("junk.zip"), "{err}");
    // Bad scopes: a usage error.
    for scope in ["global", "agent:", "agent:Bad"] {
        let err = sb.fails(2, &["put", s(&alpha), "--scope", scope]);
        assert!(
            err.contains("invalid scope") || err.contains("invalid agent name"),
            "{err}"
        );
        let err = sb.fails(2, &["list", "--scope", scope]);
        assert!(err.contains(scope), "{err}");
    }
    let err = sb.fails(1, &["list", "--agent", "Bad"]);
    assert!(err.contains("invalid agent name 'Bad'"), "{err}");
    let err = sb.fails(1, &["put", s(&alpha), "--author", "robot"]);
    assert!(err.contains("invalid author 'robot'"), "{err}");
    // Unknown revisions and skills.
    for args in [
        vec!["show", "alpha", "--rev", "9"],
        vec!["revert", "alpha", "9"],
        vec!["diff", "alpha", "1", "9"],
        vec!["export", "alpha", "--rev", "9", "--out", "x"],
    ] {
        let err = sb.fails(1, &args);
        assert!(
            err.contains("skill 'alpha' has no revision 9 (latest is 1)"),
            "{args:?}: {err}"
        );
    }
    let err = sb.fails(1, &["revert", "alpha", "0"]);
    assert!(err.contains("no revision 0"), "{err}");
    for args in [
        vec!["show", "ghost"],
        vec!["history", "ghost"],
        vec!["diff", "ghost", "1", "2"],
    ] {
        let err = sb.fails(1, &args);
        assert!(
            err.contains("no skill 'ghost' in scope shared"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(sb.list(&[]), before, "no failed command changed anything");
    assert!(!sb.path("x").exists());
    // Error messages are not repeated by the error chain.
    let err = sb.fails(2, &["--config", s(&sb.path("nope.toml")), "list"]);
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// A database written by a newer Skillbase: every command refuses (exit 2) and changes nothing.
pub(super) fn newer_schema(sb: &Sb) {
    let alpha = write_skill(&sb.path("work"), "alpha", "v1");
    sb.ok(&["put", s(&alpha)]);
    let insert = "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
                  VALUES (999, 'from the future', TRUE, X'00', 0)";
    let snapshot: Box<dyn Fn() -> String> = match (&sb.pg, sb.sqlite_file()) {
        (Some(pg), _) => {
            pg_exec(&pg.url, &insert.replace("X'00'", "'\\x00'::bytea")).unwrap();
            let url = pg.url.clone();
            Box::new(move || {
                format!(
                    "{} {} {} {} {}",
                    pg_i64(&url, "SELECT count(*) FROM _sqlx_migrations"),
                    pg_i64(&url, "SELECT count(*) FROM skills"),
                    pg_i64(&url, "SELECT count(*) FROM revisions"),
                    pg_i64(&url, "SELECT count(*) FROM events"),
                    pg_i64(&url, "SELECT count(*) FROM agents"),
                )
            })
        }
        (None, Some(file)) => {
            rt().block_on(async {
                let mut c =
                    sqlx::SqliteConnection::connect(&format!("sqlite://{}", file.display()))
                        .await
                        .unwrap();
                sqlx::query(insert).execute(&mut c).await.unwrap();
                c.close().await.unwrap();
            });
            Box::new(move || {
                let wal = PathBuf::from(format!("{}-wal", file.display()));
                let wal_len = std::fs::metadata(&wal).map_or(0, |m| m.len());
                format!(
                    "{:?} wal={wal_len}",
                    fingerprint(&file).expect("the database file")
                )
            })
        }
        _ => unreachable!(),
    };
    let before = snapshot();
    let cfg = sb.path("skillbase.toml");
    std::fs::write(&cfg, "[agents.support]\nskills = \"all\"\n").unwrap();
    let seed = sb.path("seeds");
    write_skill(&seed, "seeded", "s");
    for args in [
        vec!["list"],
        vec!["show", "alpha"],
        vec!["put", s(&alpha)],
        vec!["import", s(&examples())],
        vec!["retire", "alpha"],
        vec!["agent", "create", "x"],
        vec!["--config", s(&cfg), "agent", "list"],
        vec!["--seed", s(&seed), "list"],
    ] {
        let err = sb.fails(2, &args);
        assert!(
            err.contains("written by a newer Skillbase")
                && err.contains("999")
                && err.contains("upgrade"),
            "{args:?}: {err}"
        );
        assert_eq!(snapshot(), before, "{args:?} changed the database");
    }
}

#[test]
fn json_outputs_parse() {
    let sb = Sb::sqlite();
    sb.ok(&["import", s(&examples())]);
    let name = example_names().remove(0);
    sb.ok(&["agent", "create", "support", "--skills", "all"]);
    for args in [
        vec!["list", "--json"],
        vec!["list", "--json", "--all"],
        vec!["list", "--json", "--agent", "support"],
        vec!["list", "--json", "--scope", "agent:support"],
        vec!["show", &name, "--json"],
        vec!["show", &name, "--json", "--rev", "1"],
        vec!["history", &name, "--json"],
        vec!["agent", "show", "support", "--json"],
        vec!["agent", "list", "--json"],
        vec!["import", s(&examples()), "--json"],
    ] {
        let v = sb.json(&args);
        assert!(v.is_array() || v.is_object(), "{args:?}: {v}");
    }
    let e = &sb.json(&["list", "--json"])[0];
    let keys: BTreeSet<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
    for k in [
        "name",
        "scope",
        "status",
        "rev",
        "latest_rev",
        "digest",
        "author",
        "description",
        "files",
    ] {
        assert!(keys.contains(k), "list --json has {k}: {e}");
    }
    // Empty store: an empty JSON array, not a message.
    let empty = Sb::sqlite();
    assert_eq!(empty.json(&["list", "--json"]), serde_json::json!([]));
}

#[test]
fn database_url_forms() {
    let sb = Sb::sqlite();
    let alpha = write_skill(&sb.path("w"), "alpha", "v1");
    let file = sb.path("other.db");
    let url = format!("sqlite:{}", file.display());
    let out = Command::new(BIN)
        .args(["--db", &url, "put", s(&alpha)])
        .env("SKILLBASE_HOME", sb.path("home"))
        .env_remove("SKILLBASE_DB")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(file.exists());
    // SKILLBASE_DB, and the default under SKILLBASE_HOME.
    let out = Command::new(BIN)
        .args(["list", "--json"])
        .env("SKILLBASE_DB", &file)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1);
    let home = sb.path("home2");
    let out = Command::new(BIN)
        .args(["put", s(&alpha)])
        .env_remove("SKILLBASE_DB")
        .env("SKILLBASE_HOME", &home)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(home.join("skillbase.db").exists());
    // A database that cannot be opened: exit 2.
    let out = Command::new(BIN)
        .args(["--db", "/proc/definitely/not/here.db", "list"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open the database"));
}
