//! Packs: import and export (folders and zips, into an agent's scope), a SIGKILLed import that
//! lands all or nothing, and hostile imports refused whole.

use super::*;

/// Import a folder and a zip pack; export to a folder and a zip, byte for byte.
pub(super) fn import_export(sb: &Sb) {
    let names = example_names();
    let n = names.len();
    assert!(n >= 5, "examples/skills holds the example skills");
    let ex = examples();
    let r = sb.ok(&["import", s(&ex)]);
    for name in &names {
        assert!(
            r.stdout
                .contains(&format!("{name} (shared): created revision 1")),
            "{r:?}"
        );
    }
    assert!(
        r.stdout.contains(&format!(
            "imported {n} skills into shared: {n} created, 0 changed, 0 unchanged"
        )),
        "{r:?}"
    );
    let l = sb.list(&[]);
    let listed: Vec<String> = l
        .values()
        .map(|e| e["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed, names);
    for e in l.values() {
        assert_eq!(e["rev"], 1);
        assert!(e["author"].as_str().unwrap().starts_with("import:"), "{e}");
    }
    let r = sb.ok(&["import", s(&ex)]);
    assert!(
        r.stdout
            .contains(&format!("0 created, 0 changed, {n} unchanged")),
        "{r:?}"
    );

    // Export each skill to a folder and to a zip: the exact source bytes (and executable bits).
    for name in &names {
        let src = read_tree(&ex.join(name));
        let out = sb.path(&format!("export/{name}"));
        let r = sb.ok(&["export", name, "--out", s(&out)]);
        assert!(
            r.stdout
                .contains(&format!("{name} (shared) revision 1 written to")),
            "{r:?}"
        );
        assert_eq!(read_tree(&out), src, "{name} exported to a folder");
        let z = sb.path(&format!("export/{name}.zip"));
        sb.ok(&["export", name, "--out", s(&z)]);
        assert_eq!(
            read_zip(&z),
            prefixed(&src, name),
            "{name} exported to a zip"
        );
    }
    assert!(
        read_tree(&ex).values().any(|(_, exec)| *exec),
        "the examples include an executable script"
    );
    // A folder that exists and is not empty is never overwritten.
    let taken = sb.path(&format!("export/{}", names[0]));
    let before = read_tree(&taken);
    let err = sb.fails(1, &["export", &names[1], "--out", s(&taken)]);
    assert!(err.contains("exists and is not empty"), "{err}");
    assert_eq!(read_tree(&taken), before);

    // A zip pack under a wrapping folder, with one skill changed and one new.
    let mut pack = Tree::new();
    for name in &names {
        pack.extend(prefixed(
            &read_tree(&ex.join(name)),
            &format!("pack/{name}"),
        ));
    }
    let changed = &names[0];
    let md = format!("pack/{changed}/SKILL.md");
    pack.get_mut(&md)
        .unwrap()
        .0
        .extend_from_slice(b"\nChanged in the pack.\n");
    let new_md = skill_text("zip-only", "From the zip.").into_bytes();
    pack.insert("pack/zip-only/SKILL.md".into(), (new_md.clone(), false));
    pack.insert(
        "pack/zip-only/scripts/run.sh".into(),
        (b"#!/bin/sh\necho hi\n".to_vec(), true),
    );
    let zp = sb.path("pack.zip");
    write_zip(&zp, &pack);
    let rep = sb.json(&["import", s(&zp), "--json", "-m", "from zip"]);
    assert_eq!(rep["created"], serde_json::json!(["zip-only"]));
    assert_eq!(rep["changed"], serde_json::json!([changed]));
    assert_eq!(rep["unchanged"].as_array().unwrap().len(), n - 1);
    assert_eq!(rep["outcomes"].as_array().unwrap().len(), n + 1);
    let h = sb.history(changed, &[]);
    assert_eq!(h.len(), 2);
    assert_eq!(h[1]["message"], "from zip");
    assert!(
        h[1]["author"].as_str().unwrap().ends_with("pack.zip"),
        "{:?}",
        h[1]
    );
    assert_eq!(sb.skill_md(changed, &[]).as_bytes(), &pack[&md].0[..]);
    // What went in comes out.
    let out = sb.path("export/zip-only");
    sb.ok(&["export", "zip-only", "--out", s(&out)]);
    let want: Tree = pack
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("pack/zip-only/")?.to_owned(), v.clone())))
        .collect();
    assert_eq!(read_tree(&out), want);
    // export --rev: an old revision.
    let out = sb.path(&format!("export/{changed}-r1"));
    sb.ok(&["export", changed, "--rev", "1", "--out", s(&out)]);
    assert_eq!(read_tree(&out), read_tree(&ex.join(changed)));

    // A zip of one skill, SKILL.md at its root.
    let one: Tree = [
        (
            "SKILL.md".to_owned(),
            (skill_text("single", "One skill.").into_bytes(), false),
        ),
        ("references/a.md".to_owned(), (b"# A\n".to_vec(), false)),
    ]
    .into();
    let zp = sb.path("single.zip");
    write_zip(&zp, &one);
    let r = sb.ok(&["import", s(&zp)]);
    assert!(
        r.stdout.contains("single (shared): created revision 1"),
        "{r:?}"
    );
    let z = sb.path("export/single.zip");
    sb.ok(&["export", "single", "--out", s(&z)]);
    assert_eq!(read_zip(&z), prefixed(&one, "single"));
}

/// Importing into `agent:<name>` makes that agent's allowlist exactly the imported skills.
pub(super) fn import_into_agent_scope(sb: &Sb) {
    let ex = examples();
    let names = example_names();
    sb.ok(&["import", s(&ex)]);
    sb.ok(&[
        "agent",
        "create",
        "support",
        "--skills",
        &names[0],
        "--tools",
        "web_fetch",
        "--description",
        "Support",
    ]);
    sb.ok(&["agent", "create", "ops", "--skills", "all"]);
    let shared_before = sb.list(&["--scope", "shared"]);
    let ops_before = sb.json(&["agent", "show", "ops", "--json"]);

    let picked: Vec<&String> = names.iter().skip(1).take(3).collect();
    let mut pack = Tree::new();
    for name in &picked {
        pack.extend(prefixed(&read_tree(&ex.join(name)), name));
    }
    let own = format!("{}/SKILL.md", picked[0]);
    pack.get_mut(&own)
        .unwrap()
        .0
        .extend_from_slice(b"\nSupport's own version.\n");
    let zp = sb.path("support.zip");
    write_zip(&zp, &pack);
    let r = sb.ok(&["import", s(&zp), "--scope", "agent:support"]);
    assert!(
        r.stdout
            .contains("imported 3 skills into agent:support: 3 created"),
        "{r:?}"
    );
    assert!(
        r.stdout
            .contains("agent support now allows exactly these 3 skills"),
        "{r:?}"
    );

    let a = sb.json(&["agent", "show", "support", "--json"]);
    let mut want: Vec<&str> = picked.iter().map(|n| n.as_str()).collect();
    want.sort();
    assert_eq!(a["skills"], serde_json::json!(want));
    assert_eq!(
        a["grants"]["tools"],
        serde_json::json!(["web_fetch"]),
        "other settings kept"
    );
    assert_eq!(a["description"], "Support");
    assert_eq!(a["version"], 2);
    assert_eq!(
        sb.json(&["agent", "show", "ops", "--json"]),
        ops_before,
        "other agents untouched"
    );
    assert_eq!(
        sb.list(&["--scope", "shared"]),
        shared_before,
        "shared records untouched"
    );

    let own_scope = sb.list(&["--scope", "agent:support"]);
    assert_eq!(own_scope.len(), 3);
    // What the agent resolves to: its own records over the shared ones.
    let resolved = sb.list(&["--agent", "support"]);
    assert_eq!(resolved.len(), names.len());
    for name in &names {
        let own = resolved.contains_key(&format!("{name}@agent:support"));
        assert_eq!(own, picked.contains(&name), "{name}: {resolved:?}");
    }
    let mine = &resolved[&format!("{}@agent:support", picked[0])];
    assert_ne!(
        mine["digest"],
        shared_before[&format!("{}@shared", picked[0])]["digest"]
    );
    assert_eq!(
        sb.skill_md(picked[0], &["--scope", "agent:support"])
            .as_bytes(),
        &pack[&own].0[..]
    );
    // Every record command names a scope one way: `--scope`, or `--agent` for the record the
    // agent resolves the name to (its own here, the shared one for a name it does not hold).
    assert_eq!(
        sb.skill_md(picked[0], &["--agent", "support"]).as_bytes(),
        &pack[&own].0[..]
    );
    let own_history = sb.json(&["history", picked[0], "--agent", "support", "--json"]);
    assert_eq!(
        own_history,
        sb.json(&["history", picked[0], "--scope", "agent:support", "--json"])
    );
    let shared_name = names
        .iter()
        .find(|n| !picked.contains(n))
        .expect("a name support does not hold");
    assert_eq!(
        sb.json(&["history", shared_name, "--agent", "support", "--json"]),
        sb.json(&["history", shared_name, "--json"])
    );
    let e = sb.fails(1, &["history", shared_name, "--agent", "nobody"]);
    assert!(e.contains("nobody"), "{e}");
    let e = sb.fails(
        2,
        &[
            "history",
            shared_name,
            "--agent",
            "support",
            "--scope",
            "shared",
        ],
    );
    assert!(e.contains("--scope") || e.contains("--agent"), "{e}");

    // A new agent is created by the import.
    let r = sb.ok(&[
        "import",
        s(&ex.join(&names[0])),
        "--scope",
        "agent:fresh-agent",
    ]);
    assert!(
        r.stdout
            .contains("agent fresh-agent now allows exactly these 1 skills"),
        "{r:?}"
    );
    let a = sb.json(&["agent", "show", "fresh-agent", "--json"]);
    assert_eq!(a["skills"], serde_json::json!([names[0]]));
}

/// SIGKILL an import of a large pack while it writes: the store holds all of it or none.
pub(super) fn kill_import(sb: &Sb) {
    const N: usize = 3000;
    let pack = sb.path("bulk");
    for i in 0..N {
        let name = format!("bulk-{i:05}");
        let body = format!(
            "# Bulk skill {i}\n\n{}",
            format!("Step {i}: do the thing carefully and report back.\n").repeat(55)
        );
        let dir = write_skill(&pack, &name, &body);
        std::fs::create_dir_all(dir.join("references")).unwrap();
        std::fs::write(
            dir.join("references/notes.md"),
            format!("notes {i}\n{}\n", "x".repeat(1200)),
        )
        .unwrap();
    }
    let pack_s = s(&pack).to_owned();
    let import = ["import", pack_s.as_str(), "--scope", "agent:bulk"];
    // Delays after the import starts writing, and one attempt killed 300 ms after it started.
    let plan: [(bool, u64); 6] = [
        (true, 0),
        (true, 40),
        (true, 120),
        (true, 250),
        (true, 450),
        (false, 300),
    ];
    let mut interrupted = 0;
    let mut report = Vec::new();
    for (after_write, delay) in plan {
        let store = sb.fresh();
        // Create the database first so the probe sees only the import's writes.
        store.ok(&["agent", "list"]);
        let mut probe = Probe::new(&store);
        let mut child = store
            .cmd(&import)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        let mut writing = false;
        if after_write {
            while child.try_wait().unwrap().is_none() {
                if probe.writing() {
                    writing = true;
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(120),
                    "import never started writing"
                );
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        std::thread::sleep(Duration::from_millis(delay));
        let alive = child.try_wait().unwrap().is_none();
        writing |= probe.writing();
        child.kill().ok();
        let status = child.wait().unwrap();

        let held = store.list(&["--scope", "agent:bulk"]).len();
        assert!(
            held == 0 || held == N,
            "a killed import left {held} of {N} skills"
        );
        let agent = store.run(&["agent", "show", "bulk", "--json"]);
        if held == 0 {
            assert_eq!(agent.code, 1, "no skills, so no agent either: {agent:?}");
            if alive && writing {
                interrupted += 1;
            }
        } else {
            let a: Value = serde_json::from_str(&agent.stdout).unwrap();
            assert_eq!(a["skills"].as_array().unwrap().len(), N);
        }
        report.push(format!(
            "{}+{delay}ms: alive={alive} writing={writing} status={status} held={held}",
            if after_write { "write" } else { "spawn" }
        ));
        // The store is usable and the import can be run again.
        let r = store.ok(&import);
        assert!(
            r.stdout
                .contains(&format!("imported {N} skills into agent:bulk")),
            "{r:?}"
        );
        assert_eq!(store.list(&["--scope", "agent:bulk"]).len(), N);
        assert_eq!(
            store.json(&["agent", "show", "bulk", "--json"])["skills"]
                .as_array()
                .unwrap()
                .len(),
            N
        );
        if interrupted >= 3 {
            break;
        }
    }
    eprintln!("kill attempts:\n  {}", report.join("\n  "));
    assert!(
        interrupted >= 1,
        "no kill landed while the import was writing: {report:#?}"
    );
}

/// Whether an import's transaction is writing.
enum Probe {
    /// The WAL grows past what the migrations wrote.
    Sqlite { wal: PathBuf, base: u64 },
    /// Another session on the database holds a transaction id (it has written).
    Postgres {
        rt: tokio::runtime::Runtime,
        conn: sqlx::PgConnection,
        db: String,
    },
}

impl Probe {
    fn new(sb: &Sb) -> Probe {
        match &sb.pg {
            None => {
                let wal = PathBuf::from(format!("{}-wal", sb.db));
                let base = std::fs::metadata(&wal).map_or(0, |m| m.len());
                Probe::Sqlite { wal, base }
            }
            Some(pg) => {
                let rt = rt();
                let conn = rt.block_on(sqlx::PgConnection::connect(&pg.url)).unwrap();
                Probe::Postgres {
                    rt,
                    conn,
                    db: pg.name.clone(),
                }
            }
        }
    }

    fn writing(&mut self) -> bool {
        match self {
            Probe::Sqlite { wal, base } => {
                std::fs::metadata(&*wal).is_ok_and(|m| m.len() > *base + 256 * 1024)
            }
            Probe::Postgres { rt, conn, db } => rt.block_on(async {
                let n: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_xid IS NOT NULL",
                )
                .bind(db.as_str())
                .fetch_one(&mut *conn)
                .await
                .unwrap();
                n > 0
            }),
        }
    }
}

/// The bundle attacks of the security review, through the CLI: each refused whole, nothing
/// written, and hostile names printed escaped.
#[cfg(unix)]
#[test]
fn hostile_imports_are_refused_whole_and_named_safely() {
    use std::os::unix::fs::symlink;
    let sb = Sb::sqlite();
    // A skill outside the folder being imported, and a link to it inside.
    let outside = sb.path("outside");
    write_skill(&outside, "elsewhere", "Not meant to be imported.");
    let pack = sb.path("pack");
    write_skill(&pack, "fine", "A fine skill.");
    symlink(outside.join("elsewhere"), pack.join("elsewhere")).unwrap();
    let err = sb.fails(1, &["import", s(&pack)]);
    assert!(err.contains("link to a folder outside"), "{err}");
    assert!(sb.list(&[]).is_empty(), "nothing imported");

    // A SKILL.md that is a link to a file outside the folder: named as a link, not read.
    let linked = sb.path("linked/leaky");
    std::fs::create_dir_all(&linked).unwrap();
    std::fs::write(sb.path("secret.md"), skill_text("leaky", "Outside text.")).unwrap();
    symlink(sb.path("secret.md"), linked.join("SKILL.md")).unwrap();
    let err = sb.fails(1, &["import", s(&linked)]);
    assert!(
        err.contains("link that leaves the skill folder") && !err.contains("frontmatter"),
        "{err}"
    );

    // A zip with two entries of one path: refused whole.
    let zip = sb.path("dup.zip");
    {
        let mut tree = Tree::new();
        tree.insert(
            "dupe/SKILL.md".into(),
            (skill_text("dupe", "One.").into_bytes(), false),
        );
        tree.insert("dupe/a.md".into(), (b"first".to_vec(), false));
        tree.insert("dupe/b.md".into(), (b"other".to_vec(), false));
        write_zip(&zip, &tree);
        let mut bytes = std::fs::read(&zip).unwrap();
        // zip's writer refuses a duplicate name: the second is renamed in the bytes.
        for i in 0..bytes.len().saturating_sub(5) {
            if &bytes[i..i + 5] == b"/b.md" {
                bytes[i + 1] = b'a';
            }
        }
        std::fs::write(&zip, bytes).unwrap();
    }
    let err = sb.fails(1, &["import", s(&zip)]);
    assert!(err.contains("same name"), "{err}");
    assert!(sb.list(&[]).is_empty(), "nothing imported");

    // A zip entry whose name holds a terminal escape and a NUL: refused, printed escaped.
    let zip = sb.path("escape.zip");
    let mut tree = Tree::new();
    tree.insert(
        "SKILL.md".into(),
        (skill_text("esc", "One.").into_bytes(), false),
    );
    tree.insert("\u{1b}]0;owned\u{7}x\0.md".into(), (b"x".to_vec(), false));
    write_zip(&zip, &tree);
    let r = sb.run(&["import", s(&zip)]);
    assert_ne!(r.code, 0, "{r:?}");
    assert!(
        !r.stderr.contains('\u{1b}') && !r.stderr.contains('\0') && !r.stderr.contains('\u{7}'),
        "{r:?}"
    );
    assert!(r.stderr.contains("\\u{1b}"), "{r:?}");
}
