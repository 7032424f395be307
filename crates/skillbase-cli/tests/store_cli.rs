//! End-to-end tests of the store commands: the real `skillbase` binary against a SQLite file in a
//! temporary folder, and the same flows against PostgreSQL when `SKILLBASE_TEST_POSTGRES_URL` is
//! set (when the tests are built or run). Each PostgreSQL test gets a database of its own
//! (`CREATE DATABASE sbcli_<pid>_<n>`, dropped afterwards), since the command line has no schema
//! option. Without the variable the PostgreSQL copies are compiled as ignored (reported skipped).
//!
//! The kill test imports a generated 3,000-skill pack and SIGKILLs the importer while its
//! transaction is writing: the store must then hold all of the pack or none of it.

use crate::common::{BIN, EXAMPLES, Run, s, skill_md, skillbase};
use serde_json::Value;
use sqlx::{AssertSqlSafe, Connection};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime};

fn examples() -> PathBuf {
    PathBuf::from(EXAMPLES)
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
        let mut c = skillbase(&self.db, self.dir.path());
        c.args(args).stdin(Stdio::null());
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
    skill_md(name, "", body)
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

mod admin;
mod edges;
mod gate;
mod market;
mod packs;
mod requires;
mod revisions;
mod signatures;
mod sync;
mod versions;

use admin::{agents, config_file, seeds, status_cycle};
use edges::{bad_input, newer_schema};
use gate::gate;
use market::marketplaces;
use packs::{import_export, import_into_agent_scope, kill_import};
use requires::requirements;
use revisions::{authoring, expect_rev_conflict, recall_by_revision};
use signatures::{git_sources, lock_and_install, signatures_and_trust};
use versions::versions_and_digests;

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
    versions_and_digests,
    recall_by_revision,
    signatures_and_trust,
    git_sources,
    lock_and_install,
    requirements,
    gate,
    marketplaces,
);
