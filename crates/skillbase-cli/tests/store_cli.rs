//! End-to-end tests of the store commands: the real `skillbase` binary against a SQLite file in a
//! temporary folder, and the same flows against PostgreSQL when `SKILLBASE_TEST_POSTGRES_URL` is
//! set (when the tests are built or run). Each PostgreSQL test gets a database of its own
//! (`CREATE DATABASE sbcli_<pid>_<n>`, dropped afterwards), since the command line has no schema
//! option. Without the variable the PostgreSQL copies are compiled as ignored (reported skipped).
//!
//! The kill test imports a generated 3,000-skill pack and SIGKILLs the importer while its
//! transaction is writing: the store must then hold all of the pack or none of it.

use serde_json::Value;
use sqlx::{AssertSqlSafe, Connection};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime};

const BIN: &str = env!("CARGO_BIN_EXE_skillbase");

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/skills")
}

/// The names of the example skills (the folders holding a SKILL.md).
fn example_names() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(examples())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("SKILL.md").is_file())
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_owned())
        .collect();
    v.sort();
    v
}

fn pg_admin_url() -> Option<String> {
    std::env::var("SKILLBASE_TEST_POSTGRES_URL")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| {
            option_env!("SKILLBASE_TEST_POSTGRES_URL")
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        })
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().expect("temporary paths are UTF-8")
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL: one database per test.

static PG_COUNTER: AtomicU32 = AtomicU32::new(0);

/// `url` with its database replaced by `db` (query string kept).
fn with_database(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let host_start = base.find("://").map_or(0, |i| i + 3);
    let base = match base[host_start..].find('/') {
        Some(i) => &base[..host_start + i],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{db}?{q}"),
        None => format!("{base}/{db}"),
    }
}

fn pg_exec(url: &str, sql: &str) -> Result<(), sqlx::Error> {
    rt().block_on(async {
        let mut c = sqlx::PgConnection::connect(url).await?;
        sqlx::raw_sql(AssertSqlSafe(sql.to_owned()))
            .execute(&mut c)
            .await?;
        c.close().await
    })
}

fn pg_i64(url: &str, sql: &str) -> i64 {
    rt().block_on(async {
        let mut c = sqlx::PgConnection::connect(url).await.unwrap();
        let v: i64 = sqlx::query_scalar(AssertSqlSafe(sql.to_owned()))
            .fetch_one(&mut c)
            .await
            .unwrap();
        let _ = c.close().await;
        v
    })
}

struct PgDb {
    admin: String,
    name: String,
    url: String,
}

impl PgDb {
    fn create(admin: &str) -> PgDb {
        let name = format!(
            "sbcli_{}_{}",
            std::process::id(),
            PG_COUNTER.fetch_add(1, Ordering::SeqCst)
        );
        pg_exec(
            admin,
            &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        )
        .unwrap();
        pg_exec(admin, &format!("CREATE DATABASE {name}")).unwrap();
        PgDb {
            url: with_database(admin, &name),
            admin: admin.to_owned(),
            name,
        }
    }
}

impl Drop for PgDb {
    fn drop(&mut self) {
        let _ = pg_exec(
            &self.admin,
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Running the binary.

/// A store (SQLite file or PostgreSQL database) and a scratch folder.
struct Sb {
    dir: tempfile::TempDir,
    db: String,
    pg: Option<PgDb>,
}

/// What a command did.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Sb {
    fn sqlite() -> Sb {
        let dir = tempfile::tempdir().unwrap();
        let db = s(&dir.path().join("db.sqlite")).to_owned();
        Sb { dir, db, pg: None }
    }

    fn postgres(admin: &str) -> Sb {
        let pg = PgDb::create(admin);
        Sb {
            dir: tempfile::tempdir().unwrap(),
            db: pg.url.clone(),
            pg: Some(pg),
        }
    }

    /// A new, empty store on the same backend.
    fn fresh(&self) -> Sb {
        match &self.pg {
            None => Sb::sqlite(),
            Some(pg) => Sb::postgres(&pg.admin),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn sqlite_file(&self) -> Option<PathBuf> {
        self.pg.is_none().then(|| PathBuf::from(&self.db))
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.arg("--db")
            .arg(&self.db)
            .args(args)
            .current_dir(self.dir.path())
            .env_remove("SKILLBASE_DB")
            .env_remove("SKILLBASE_CONFIG")
            .env("SKILLBASE_HOME", self.dir.path().join("home"))
            .env("USER", "tester")
            .env("RUST_BACKTRACE", "0")
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Run {
        let out = self.cmd(args).output().unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }

    #[track_caller]
    fn ok(&self, args: &[&str]) -> Run {
        let r = self.run(args);
        assert_eq!(r.code, 0, "skillbase {args:?} failed: {r:#?}");
        r
    }

    /// Run expecting exit `code`; returns stderr.
    #[track_caller]
    fn fails(&self, code: i32, args: &[&str]) -> String {
        let r = self.run(args);
        assert_eq!(r.code, code, "skillbase {args:?}: {r:#?}");
        assert!(r.stdout.is_empty(), "nothing on stdout on failure: {r:#?}");
        assert!(!r.stderr.trim().is_empty(), "a failure says why: {r:#?}");
        assert!(!r.stderr.contains("panicked"), "{r:#?}");
        r.stderr
    }

    #[track_caller]
    fn json(&self, args: &[&str]) -> Value {
        let r = self.ok(args);
        serde_json::from_str(&r.stdout)
            .unwrap_or_else(|e| panic!("skillbase {args:?} printed invalid JSON ({e}): {r:#?}"))
    }

    /// `list --json` (with extra arguments) as name -> record.
    #[track_caller]
    fn list(&self, extra: &[&str]) -> BTreeMap<String, Value> {
        let mut args = vec!["list", "--json"];
        args.extend_from_slice(extra);
        let v = self.json(&args);
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    format!(
                        "{}@{}",
                        e["name"].as_str().unwrap(),
                        e["scope"].as_str().unwrap()
                    ),
                    e.clone(),
                )
            })
            .collect()
    }

    #[track_caller]
    fn history(&self, name: &str, extra: &[&str]) -> Vec<Value> {
        let mut args = vec!["history", name, "--json"];
        args.extend_from_slice(extra);
        self.json(&args).as_array().unwrap().clone()
    }

    #[track_caller]
    fn skill_md(&self, name: &str, extra: &[&str]) -> String {
        let mut args = vec!["show", name, "--json"];
        args.extend_from_slice(extra);
        self.json(&args)["skill_md"].as_str().unwrap().to_owned()
    }
}

// ---------------------------------------------------------------------------------------------
// Skill folders, trees and zips.

fn skill_text(name: &str, body: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: Does {name} things. Use when asked about {name}.\n---\n{body}\n"
    )
}

/// Write `parent/name/SKILL.md` (replacing it) and return the folder.
fn write_skill(parent: &Path, name: &str, body: &str) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), skill_text(name, body)).unwrap();
    dir
}

/// A file tree: relative path -> (bytes, executable).
type Tree = BTreeMap<String, (Vec<u8>, bool)>;

fn read_tree(dir: &Path) -> Tree {
    fn walk(root: &Path, dir: &Path, out: &mut Tree) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                use std::os::unix::fs::PermissionsExt;
                let exec = std::fs::metadata(&p).unwrap().permissions().mode() & 0o100 != 0;
                let rel = p.strip_prefix(root).unwrap().to_str().unwrap().to_owned();
                out.insert(rel, (std::fs::read(&p).unwrap(), exec));
            }
        }
    }
    let mut out = Tree::new();
    walk(dir, dir, &mut out);
    out
}

/// The tree with every path under `prefix/`.
fn prefixed(tree: &Tree, prefix: &str) -> Tree {
    tree.iter()
        .map(|(k, v)| (format!("{prefix}/{k}"), v.clone()))
        .collect()
}

fn write_zip(path: &Path, tree: &Tree) {
    let mut z = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, (bytes, exec)) in tree {
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(if *exec { 0o755 } else { 0o644 });
        z.start_file(name.as_str(), opts).unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap();
}

fn read_zip(path: &Path) -> Tree {
    let mut a = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut out = Tree::new();
    for i in 0..a.len() {
        let mut f = a.by_index(i).unwrap();
        if f.is_dir() {
            continue;
        }
        let name = f.name().unwrap().into_owned();
        let exec = f.unix_mode().is_some_and(|m| m & 0o100 != 0);
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes).unwrap();
        out.insert(name, (bytes, exec));
    }
    out
}

/// Everything about a file that a command must not touch.
fn fingerprint(p: &Path) -> Option<(Vec<u8>, SystemTime)> {
    let m = std::fs::metadata(p).ok()?;
    Some((std::fs::read(p).unwrap(), m.modified().unwrap()))
}

// ---------------------------------------------------------------------------------------------
// The flows, each run on both backends.

/// put -> history -> diff -> show --rev -> revert, every write printing its revision.
fn authoring(sb: &Sb) {
    let work = sb.path("work");
    let alpha = write_skill(&work, "alpha", "v1");
    let r = sb.ok(&["put", s(&alpha)]);
    assert_eq!(r.stdout.trim(), "alpha (shared): created revision 1");
    write_skill(&work, "alpha", "v2");
    let r = sb.ok(&["put", s(&alpha), "-m", "second"]);
    assert_eq!(
        r.stdout.trim(),
        "alpha (shared): wrote revision 2 (now active)"
    );
    // The same bundle again, through its SKILL.md: no new revision.
    let r = sb.ok(&["put", s(&alpha.join("SKILL.md"))]);
    assert_eq!(
        r.stdout.trim(),
        "alpha (shared): unchanged (revision 2 is already active, status active)"
    );

    let h = sb.history("alpha", &[]);
    assert_eq!(h.len(), 2);
    assert_eq!(h[1]["rev"], 2);
    assert_eq!(h[1]["message"], "second");
    assert_eq!(h[1]["active"], true);
    assert_eq!(h[0]["author"], "human:tester");
    let text = sb.ok(&["history", "alpha"]).stdout;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("*    2") && lines[0].contains("second"),
        "{text}"
    );
    assert!(lines[1].starts_with("     1"), "{text}");

    let d = sb.ok(&["diff", "alpha", "1", "2"]).stdout;
    assert!(
        d.contains("--- a/SKILL.md") && d.contains("+++ b/SKILL.md"),
        "{d}"
    );
    assert!(d.contains("\n-v1\n") && d.contains("\n+v2\n"), "{d}");
    let same = sb.ok(&["diff", "alpha", "2", "2"]);
    assert!(
        same.stdout.is_empty() && same.stderr.contains("identical"),
        "{same:?}"
    );

    // show --rev: a past revision, marked as not active.
    let old = sb.json(&["show", "alpha", "--rev", "1", "--json"]);
    assert_eq!(old["revision"]["rev"], 1);
    assert_eq!(old["revision"]["active"], false);
    assert_eq!(old["skill_md"], skill_text("alpha", "v1"));
    let t = sb.ok(&["show", "alpha", "--rev", "1"]).stdout;
    assert!(
        t.starts_with("alpha (shared) revision 1 by human:tester"),
        "{t}"
    );
    assert!(!t.lines().next().unwrap().contains("[active]"), "{t}");
    let t = sb.ok(&["show", "alpha"]).stdout;
    assert!(
        t.contains("revision 2 [active]") && t.contains("message: second"),
        "{t}"
    );

    let r = sb.ok(&["revert", "alpha", "1", "--author", "human:bo"]);
    assert_eq!(
        r.stdout.trim(),
        "alpha (shared): reverted to revision 1 (now active)"
    );
    let h = sb.history("alpha", &[]);
    assert_eq!(h.len(), 2, "a revert never rewrites history");
    assert_eq!(
        (h[0]["active"].clone(), h[1]["active"].clone()),
        (true.into(), false.into())
    );
    assert_eq!(sb.skill_md("alpha", &[]), skill_text("alpha", "v1"));
    let l = sb.list(&[]);
    assert_eq!(l["alpha@shared"]["rev"], 1);
    assert_eq!(l["alpha@shared"]["latest_rev"], 2);

    // A modification after a revert appends revision 3.
    write_skill(&work, "alpha", "v3");
    let r = sb.ok(&["put", s(&alpha)]);
    assert_eq!(
        r.stdout.trim(),
        "alpha (shared): wrote revision 3 (now active)"
    );
    let d = sb.ok(&["diff", "alpha", "1", "3"]).stdout;
    assert!(d.contains("-v1") && d.contains("+v3"), "{d}");

    // The same skill in an agent's scope is another record.
    let r = sb.ok(&["put", s(&alpha), "--scope", "agent:support"]);
    assert_eq!(r.stdout.trim(), "alpha (agent:support): created revision 1");
    assert_eq!(sb.history("alpha", &[]).len(), 3);
    assert_eq!(sb.history("alpha", &["--scope", "agent:support"]).len(), 1);
}

/// --expect-rev: the loser exits 1, is told who won, and nothing changes.
fn expect_rev_conflict(sb: &Sb) {
    let work = sb.path("work");
    let beta = write_skill(&work, "beta", "v1");
    sb.ok(&["put", s(&beta), "--expect-rev", "0"]);
    write_skill(&work, "beta", "v2");
    let r = sb.ok(&["put", s(&beta), "--expect-rev", "1", "--author", "human:bo"]);
    assert!(r.stdout.contains("wrote revision 2"), "{r:?}");
    write_skill(&work, "beta", "v3");
    let before = sb.list(&[]);
    let err = sb.fails(1, &["put", s(&beta), "--expect-rev", "1"]);
    assert!(err.contains("conflict on skill 'beta'"), "{err}");
    assert!(
        err.contains("revision 2 by human:bo got there first"),
        "{err}"
    );
    assert!(err.contains("--expect-rev 2"), "{err}");
    assert_eq!(sb.history("beta", &[]).len(), 2);
    assert_eq!(sb.skill_md("beta", &[]), skill_text("beta", "v2"));
    assert_eq!(sb.list(&[]), before, "a refused write changes nothing");
    // 0 means "must be new".
    let err = sb.fails(1, &["put", s(&beta), "--expect-rev", "0"]);
    assert!(
        err.contains("conflict") && err.contains("expected revision 0"),
        "{err}"
    );

    // Two writers at once, both expecting revision 2: exactly one wins.
    let (a, b) = (sb.path("ra"), sb.path("rb"));
    let pa = write_skill(&a, "beta", "writer a");
    let pb = write_skill(&b, "beta", "writer b");
    let ca = sb
        .cmd(&["put", s(&pa), "--expect-rev", "2", "--author", "human:a"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let cb = sb
        .cmd(&["put", s(&pb), "--expect-rev", "2", "--author", "human:b"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (oa, ob) = (
        ca.wait_with_output().unwrap(),
        cb.wait_with_output().unwrap(),
    );
    let codes = [oa.status.code().unwrap(), ob.status.code().unwrap()];
    assert!(
        codes == [0, 1] || codes == [1, 0],
        "exactly one concurrent writer wins: {oa:?} {ob:?}"
    );
    let (winner, loser) = if codes[0] == 0 {
        ("human:a", &ob)
    } else {
        ("human:b", &oa)
    };
    let msg = String::from_utf8_lossy(&loser.stderr);
    assert!(msg.contains(&format!("revision 3 by {winner}")), "{msg}");
    let h = sb.history("beta", &[]);
    assert_eq!(h.len(), 3);
    assert_eq!(h[2]["author"], winner);
}

/// Import a folder and a zip pack; export to a folder and a zip, byte for byte.
fn import_export(sb: &Sb) {
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
fn import_into_agent_scope(sb: &Sb) {
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

/// retire / restore / disable / enable.
fn status_cycle(sb: &Sb) {
    let work = sb.path("work");
    let alpha = write_skill(&work, "alpha", "v1");
    sb.ok(&["put", s(&alpha)]);
    let r = sb.ok(&["retire", "alpha"]);
    assert_eq!(
        r.stdout.trim(),
        "alpha (shared): is now retired (revision 1)"
    );
    assert!(
        !sb.list(&[]).contains_key("alpha@shared"),
        "retired skills are hidden"
    );
    assert_eq!(sb.list(&["--all"])["alpha@shared"]["status"], "retired");
    write_skill(&work, "alpha", "v2");
    for args in [
        vec!["put", s(&alpha)],
        vec!["disable", "alpha"],
        vec!["revert", "alpha", "1"],
    ] {
        let err = sb.fails(1, &args);
        assert!(
            err.contains("is retired") && err.contains("skillbase restore alpha"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(
        sb.history("alpha", &[]).len(),
        1,
        "retire keeps every revision"
    );
    assert_eq!(sb.json(&["show", "alpha", "--json"])["status"], "retired");
    // The transition table REST uses: enable does not bring a retired skill back.
    let err = sb.fails(1, &["enable", "alpha"]);
    assert!(err.contains("is retired: restore it first"), "{err}");
    let r = sb.ok(&["restore", "alpha"]);
    assert_eq!(
        r.stdout.trim(),
        "alpha (shared): is now active (revision 1)"
    );
    let r = sb.ok(&["disable", "alpha", "--author", "human:ops"]);
    assert_eq!(
        r.stdout.trim(),
        "alpha (shared): is now disabled (revision 1)"
    );
    assert_eq!(sb.list(&[])["alpha@shared"]["status"], "disabled");
    assert!(sb.ok(&["list"]).stdout.contains("disabled"));
    // ... and restore does not enable a disabled one.
    let err = sb.fails(1, &["restore", "alpha"]);
    assert!(err.contains("is disabled, not retired"), "{err}");
    assert_eq!(sb.list(&[])["alpha@shared"]["status"], "disabled");
    // A disabled skill still takes revisions.
    let r = sb.ok(&["put", s(&alpha)]);
    assert!(r.stdout.contains("wrote revision 2"), "{r:?}");
    let r = sb.ok(&["enable", "alpha"]);
    assert_eq!(
        r.stdout.trim(),
        "alpha (shared): is now active (revision 2)"
    );
    assert_eq!(sb.list(&[])["alpha@shared"]["status"], "active");
    let err = sb.fails(1, &["retire", "nope"]);
    assert!(err.contains("no skill 'nope' in scope shared"), "{err}");
    let err = sb.fails(1, &["enable", "alpha", "--scope", "agent:support"]);
    assert!(
        err.contains("no skill 'alpha' in scope agent:support"),
        "{err}"
    );
}

/// agent create / set / show / list.
fn agents(sb: &Sb) {
    let err = sb.run(&["agent", "list"]);
    assert_eq!(err.code, 0);
    assert!(err.stderr.contains("No agents"), "{err:?}");
    assert_eq!(sb.json(&["agent", "list", "--json"]), serde_json::json!([]));
    let r = sb.ok(&[
        "agent",
        "create",
        "support",
        "--skills",
        "refund-policy, refund-procedure",
        "--eager",
        "refund-policy",
        "--tools",
        "web_fetch",
        "--hosts",
        "API.Payments.example.com",
        "--vault",
        "PAYMENTS_KEY",
        "--catalog-budget",
        "2000",
        "--description",
        "Customer support",
    ]);
    assert_eq!(r.stdout.trim(), "agent support created (version 1)");
    let a = sb.json(&["agent", "show", "support", "--json"]);
    assert_eq!(a["name"], "support");
    assert_eq!(
        a["skills"],
        serde_json::json!(["refund-policy", "refund-procedure"])
    );
    assert_eq!(a["eager"], serde_json::json!(["refund-policy"]));
    assert_eq!(
        a["grants"]["hosts"],
        serde_json::json!(["api.payments.example.com"])
    );
    assert_eq!(a["grants"]["vault"], serde_json::json!(["PAYMENTS_KEY"]));
    assert_eq!(a["catalog_budget"], 2000);
    assert_eq!(a["version"], 1);
    let err = sb.fails(1, &["agent", "create", "support"]);
    assert!(err.contains("agent 'support' already exists"), "{err}");

    let r = sb.ok(&[
        "agent",
        "set",
        "support",
        "--skills",
        "all",
        "--failure-threshold",
        "5",
    ]);
    assert_eq!(r.stdout.trim(), "agent support updated (version 2)");
    let b = sb.json(&["agent", "show", "support", "--json"]);
    assert_eq!(b["skills"], "all");
    assert_eq!(b["policies"]["failure_threshold"], 5);
    assert_eq!(b["eager"], a["eager"], "set changes only the options given");
    assert_eq!(b["grants"], a["grants"]);
    let t = sb.ok(&["agent", "show", "support"]).stdout;
    assert!(
        t.contains("skills = \"all\"") && t.contains("# version 2"),
        "{t}"
    );

    sb.ok(&["agent", "create", "ops"]);
    let l = sb.json(&["agent", "list", "--json"]);
    let names: Vec<&str> = l
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ops", "support"]);
    let t = sb.ok(&["agent", "list"]).stdout;
    assert!(t.contains("ops") && t.contains("no skills"), "{t}");
    assert!(
        t.contains("support") && t.contains("all skills") && t.contains("Customer support"),
        "{t}"
    );

    let err = sb.fails(1, &["agent", "set", "nobody", "--skills", "all"]);
    assert!(
        err.contains("no agent 'nobody'") && err.contains("skillbase agent create nobody"),
        "{err}"
    );
    let err = sb.fails(1, &["agent", "show", "nobody"]);
    assert!(err.contains("no agent 'nobody'"), "{err}");
    for bad in ["Support", "_x", "a b", "agent/x"] {
        let err = sb.fails(1, &["agent", "create", bad]);
        assert!(
            err.contains(&format!("invalid agent name '{bad}'")),
            "{err}"
        );
    }
    let err = sb.fails(1, &["agent", "set", "support", "--skills", "Not A Name"]);
    assert!(err.contains("--skills"), "{err}");
    let err = sb.fails(1, &["agent", "set", "support", "--failure-threshold", "0"]);
    // The store's one check of agent configurations (the same for REST and skillbase.toml).
    assert!(
        err.contains("policies.failure_threshold must be at least 1"),
        "{err}"
    );
    let err = sb.fails(
        1,
        &[
            "agent",
            "set",
            "support",
            "--hosts",
            "http://x.example.com/",
        ],
    );
    assert!(
        err.contains("grants.hosts") && err.contains("not a URL"),
        "{err}"
    );
    assert_eq!(
        sb.json(&["agent", "show", "support", "--json"])["version"],
        2,
        "refused edits change nothing"
    );
}

/// --config skillbase.toml applies its agents before the command.
fn config_file(sb: &Sb) {
    let cfg = sb.path("skillbase.toml");
    std::fs::write(
        &cfg,
        r#"
[agents.support]
description = "Customer support"
skills = ["refund-procedure", "refund-policy"]
eager = ["refund-policy"]
catalog_budget = 3000

[agents.support.grants]
tools = ["web_fetch"]
hosts = ["api.payments.example.com"]

[agents.ops]
skills = "all"
"#,
    )
    .unwrap();
    let l = sb.json(&["--config", s(&cfg), "agent", "list", "--json"]);
    let l = l.as_array().unwrap();
    assert_eq!(l.len(), 2);
    let support = l.iter().find(|a| a["name"] == "support").unwrap();
    assert_eq!(
        support["skills"],
        serde_json::json!(["refund-policy", "refund-procedure"])
    );
    assert_eq!(support["grants"]["tools"], serde_json::json!(["web_fetch"]));
    assert_eq!(support["catalog_budget"], 3000);
    assert_eq!(support["version"], 1);
    assert_eq!(
        l.iter().find(|a| a["name"] == "ops").unwrap()["skills"],
        "all"
    );
    // Applying the same file again changes nothing; editing it updates the agent.
    sb.ok(&["--config", s(&cfg), "list"]);
    assert_eq!(
        sb.json(&["agent", "show", "support", "--json"])["version"],
        1
    );
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("3000", "2500");
    std::fs::write(&cfg, text).unwrap();
    let a = sb.json(&["--config", s(&cfg), "agent", "show", "support", "--json"]);
    assert_eq!(
        (a["catalog_budget"].clone(), a["version"].clone()),
        (2500.into(), 2.into())
    );
    // The environment variable works too.
    let out = sb
        .cmd(&["agent", "list", "--json"])
        .env("SKILLBASE_CONFIG", &cfg)
        .output()
        .unwrap();
    assert!(out.status.success());

    // A bad file: exit 1, naming the file and the key; nothing applied.
    let bad = sb.path("bad.toml");
    std::fs::write(&bad, "[agents.extra]\nskils = []\n").unwrap();
    let err = sb.fails(1, &["--config", s(&bad), "agent", "list"]);
    assert!(err.contains("bad.toml") && err.contains("skils"), "{err}");
    std::fs::write(&bad, "[agents.Bad]\n").unwrap();
    let err = sb.fails(1, &["--config", s(&bad), "agent", "list"]);
    assert!(err.contains("invalid agent name 'Bad'"), "{err}");
    assert_eq!(
        sb.json(&["agent", "list", "--json"])
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // A file that does not exist is a missing path.
    let err = sb.fails(2, &["--config", s(&sb.path("nope.toml")), "agent", "list"]);
    assert!(
        err.contains("nope.toml") && err.contains("does not exist"),
        "{err}"
    );
}

/// --seed DIR syncs skill folders into the shared scope; once edited in the store, the store wins.
fn seeds(sb: &Sb) {
    let seed = sb.path("seeds");
    let a = write_skill(&seed, "seeded-a", "a1");
    write_skill(&seed, "seeded-b", "b1");
    let r = sb.ok(&["--seed", s(&seed), "list", "--json"]);
    assert!(
        r.stderr.contains("seed: seeded-a created (revision 1)"),
        "{r:?}"
    );
    assert!(
        r.stderr.contains("seed: seeded-b created (revision 1)"),
        "{r:?}"
    );
    let l: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(l.as_array().unwrap().len(), 2);
    let canon = a.canonicalize().unwrap();
    assert_eq!(l[0]["author"], format!("seed:{}", canon.display()));
    assert_eq!(l[0]["seed_path"], canon.display().to_string());

    // Unchanged folders: nothing reported, nothing written.
    let r = sb.ok(&["--seed", s(&seed), "list"]);
    assert!(!r.stderr.contains("seed:"), "{r:?}");
    // A changed folder appends a revision.
    write_skill(&seed, "seeded-a", "a2");
    let r = sb.ok(&["--seed", s(&seed), "history", "seeded-a"]);
    assert!(
        r.stderr.contains("seed: seeded-a updated (revision 2)"),
        "{r:?}"
    );
    assert_eq!(sb.history("seeded-a", &[]).len(), 2);

    // Edited in the store: it stops following the folder.
    let mine = write_skill(&sb.path("mine"), "seeded-a", "edited in the store");
    sb.ok(&["put", s(&mine)]);
    write_skill(&seed, "seeded-a", "a3");
    let r = sb.ok(&["--seed", s(&seed), "list"]);
    assert!(
        r.stderr.contains("seeded-a was edited in the store"),
        "{r:?}"
    );
    assert_eq!(
        sb.skill_md("seeded-a", &[]),
        skill_text("seeded-a", "edited in the store")
    );
    assert_eq!(sb.history("seeded-a", &[]).len(), 3);
    assert_eq!(sb.list(&[])["seeded-a@shared"]["seed_path"], Value::Null);

    // An invalid folder is skipped with a reason; the others still sync.
    let broken = seed.join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(
        broken.join("SKILL.md"),
        "---\nname: broken\n---\nno description\n",
    )
    .unwrap();
    write_skill(&seed, "seeded-c", "c1");
    let r = sb.ok(&["--seed", s(&seed), "list", "--json"]);
    assert!(
        r.stderr.contains("seed: skipped") && r.stderr.contains("description"),
        "{r:?}"
    );
    assert!(
        r.stderr.contains("seed: seeded-c created (revision 1)"),
        "{r:?}"
    );
    // A seed folder that does not exist is a missing path.
    let err = sb.fails(2, &["--seed", s(&sb.path("no-such-seeds")), "list"]);
    assert!(
        err.contains("no-such-seeds") && err.contains("does not exist"),
        "{err}"
    );
}

/// Bad input: the right exit code and a message that says what is wrong.
fn bad_input(sb: &Sb) {
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
fn newer_schema(sb: &Sb) {
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

/// SIGKILL an import of a large pack while it writes: the store holds all of it or none.
fn kill_import(sb: &Sb) {
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

// ---------------------------------------------------------------------------------------------

macro_rules! on_both_backends {
    ($($flow:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[test]
                fn $flow() {
                    super::$flow(&super::Sb::sqlite());
                }
            )*
        }
        mod postgres {
            $(
                #[test]
                #[cfg_attr(not(skillbase_pg), ignore = "PostgreSQL tests skipped: set SKILLBASE_TEST_POSTGRES_URL to run them")]
                fn $flow() {
                    let url = super::pg_admin_url().expect(
                        "SKILLBASE_TEST_POSTGRES_URL was set when the tests were built but is not set now",
                    );
                    super::$flow(&super::Sb::postgres(&url));
                }
            )*
        }
    };
}

on_both_backends!(
    authoring,
    expect_rev_conflict,
    import_export,
    import_into_agent_scope,
    status_cycle,
    agents,
    config_file,
    seeds,
    bad_input,
    newer_schema,
    kill_import,
);

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
