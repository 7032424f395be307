//! The store: one API over both backends, with the in-memory index kept current.
//!
//! [`Store`] is one type; its operations are grouped by noun, one `impl Store` block per file:
//! `skills` (writes, statuses, history, bundles, imports), `agents`, `sessions` (activations and
//! notes), `runs`, `events`, `tokens`, `vault`, `usage` (the usage figures), `sync` (other
//! servers' writes, seed divergence) and `guard` (the vault's [`ContentGuard`]). This file holds the type, opening and the index.

use crate::db::{Db, DbUrl};
use crate::error::{Result, StoreError};
use crate::index::{FileRef, Index, SkillEntry};
use crate::model::{Agent, AgentName, Scope};
use crate::records::RawEntry;
use arc_swap::ArcSwap;
use skillbase_format::{BundleLimits, SkillMd, SkillMeta};
use std::sync::Arc;

/// Call a noun's statement on the store's backend: `on_db!(self, skills::load_all())`.
/// A write refused by a store opened read-only says why the store is read-only.
macro_rules! on_db {
    ($self:expr, $noun:ident :: $f:ident ( $($arg:expr),* )) => {
        match &$self.db {
            crate::db::Db::Sqlite(p) => crate::sql::$noun::sqlite::$f(p, $($arg),*).await,
            crate::db::Db::Postgres(p) => crate::sql::$noun::postgres::$f(p, $($arg),*).await,
        }
        .map_err(|e| $self.read_only_error(e))
    };
}

mod agents;
mod events;
mod guard;
mod runs;
mod scans;
mod sessions;
mod skills;
mod sync;
mod tokens;
mod upstreams;
mod usage;
mod vault;
mod vectors;

use guard::scrub_entry;
pub use guard::{ContentGuard, WriteGuard};
pub use scans::{RescanReport, VerdictChange};
pub use skills::{ImportReport, PutRequest, Settlement, StoredMatch};
use sync::SyncWindow;
pub use sync::{Change, ChangeListener, SYNC_LOOKBACK};

/// The skills store.
pub struct Store {
    db: Db,
    index: ArcSwap<Index>,
    agent_cache: ArcSwap<std::collections::HashMap<AgentName, Arc<Agent>>>,
    write_guard: ArcSwap<Option<WriteGuard>>,
    /// `[store] versions = "require-increase"`: a write not raising the version is refused.
    require_version_increase: std::sync::atomic::AtomicBool,
    /// Which sources must be signed, by whom (`[trust]`).
    trust: ArcSwap<crate::trust::TrustPolicy>,
    /// Whether a changed signer is accepted (and re-pinned) in this process
    /// (`--accept-new-signer`).
    accept_new_signer: std::sync::atomic::AtomicBool,
    /// What the scan's findings get on arrival (`[scan]`).
    scan_policy: ArcSwap<crate::scan::ScanPolicy>,
    /// The scanner, its rules compiled on first use (or set: `Store::set_scanner`).
    scanner: arc_swap::ArcSwapOption<skillbase_scan::Scanner>,
    /// Serialises index swaps so a slower writer never overwrites a newer state.
    index_lock: tokio::sync::Mutex<()>,
    /// Serialises agent-cache refreshes, for the same reason.
    agents_lock: tokio::sync::Mutex<()>,
    /// The events `sync_changes` has applied, and what it looks back over (late commits on
    /// PostgreSQL).
    sync: std::sync::Mutex<SyncWindow>,
    /// Ticks after every index swap and agent refresh (servers notify clients from it).
    changed: tokio::sync::watch::Sender<u64>,
    /// SKILL.md blobs whose bytes this process has hashed and found to match their digest.
    verified: Verified,
    /// Why the store was opened read-only, if it was (its location, and the reason).
    read_only: Option<(String, String)>,
    /// The SQLite file, whose writability a storage fault is checked against to name its cause.
    sqlite_path: Option<std::path::PathBuf>,
    /// The limits every written bundle must meet.
    pub limits: BundleLimits,
}

/// Blob digests whose bytes were hashed once and matched: what reaches a model from the index
/// (eager bodies, triggered bodies, `load_skill`) is checked against its digest, once per blob
/// per process however often the index is reloaded. A SKILL.md altered at rest does not enter
/// the index (a warning is logged), as show, export and `resources/read` refuse the bundle.
#[derive(Default)]
struct Verified(std::sync::Mutex<std::collections::HashSet<skillbase_format::Digest>>);

impl Verified {
    fn check(&self, digest: &skillbase_format::Digest, bytes: &[u8]) -> bool {
        let mut seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if seen.contains(digest) {
            return true;
        }
        if skillbase_format::Digest::of(bytes) != *digest {
            return false;
        }
        seen.insert(*digest);
        true
    }
}

impl Store {
    /// Open the database (creating and migrating it) and load the index.
    pub async fn open(url: &DbUrl) -> Result<Store> {
        let (db, read_only) = Db::open_for_store(url).await?;
        if let Some(why) = &read_only {
            tracing::warn!(db = %url.redacted(), why = %why, "the store is open read-only: reads work, writes are refused");
        }
        let store = Store {
            read_only: read_only.map(|why| (url.redacted(), why)),
            sqlite_path: match url {
                DbUrl::Sqlite(path) => Some(path.clone()),
                DbUrl::Postgres { .. } => None,
            },
            db,
            index: ArcSwap::from_pointee(Index::default()),
            agent_cache: ArcSwap::from_pointee(std::collections::HashMap::new()),
            write_guard: ArcSwap::from_pointee(None),
            require_version_increase: std::sync::atomic::AtomicBool::new(false),
            trust: ArcSwap::from_pointee(crate::trust::TrustPolicy::default()),
            accept_new_signer: std::sync::atomic::AtomicBool::new(false),
            scan_policy: ArcSwap::from_pointee(crate::scan::ScanPolicy::default()),
            scanner: arc_swap::ArcSwapOption::empty(),
            index_lock: tokio::sync::Mutex::new(()),
            agents_lock: tokio::sync::Mutex::new(()),
            sync: std::sync::Mutex::new(SyncWindow::default()),
            changed: tokio::sync::watch::Sender::new(0),
            verified: Verified::default(),
            limits: BundleLimits::default(),
        };
        // The first load reads through a memory map (faster), the serving pool never does.
        let mapped = match store.read_only {
            None => crate::db::mapped_loader(url).await,
            Some(_) => None,
        };
        let loaded = store.reload_from(mapped.as_ref()).await;
        if let Some(pool) = mapped {
            pool.close().await;
        }
        loaded?;
        Ok(store)
    }

    /// `sqlite` or `postgres`.
    pub fn backend(&self) -> &'static str {
        self.db.backend()
    }

    /// Why the store is open read-only, when it is (writes are then refused with
    /// [`StoreError::ReadOnly`] saying so).
    pub fn read_only(&self) -> Option<&str> {
        self.read_only.as_ref().map(|(_, why)| why.as_str())
    }

    /// A write the database refused as read-only names the reason the store was opened so; a
    /// SQLite fault while the store's files cannot be written (they turned unwritable under a
    /// running server) names the file and the reason.
    fn read_only_error(&self, e: StoreError) -> StoreError {
        match (&self.read_only, e) {
            (Some((url, why)), StoreError::ReadOnly { .. }) => StoreError::ReadOnly {
                url: url.clone(),
                why: format!("{why} (it was opened read-only: restart once it can be written)"),
            },
            (None, e @ (StoreError::ReadOnly { .. } | StoreError::Unavailable(_))) => {
                let Some(path) = &self.sqlite_path else {
                    return e;
                };
                match crate::db::unwritable(path) {
                    Some(why) => StoreError::ReadOnly {
                        url: path.display().to_string(),
                        why,
                    },
                    None => e,
                }
            }
            (_, e) => e,
        }
    }

    /// Close the database pool.
    pub async fn close(&self) {
        self.db.close().await;
    }

    /// A receiver that changes whenever the index or the agents change: wait on it to learn
    /// that what some agent may see might have changed.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// A consistent snapshot of every skill record. Never blocks.
    pub fn index(&self) -> Arc<Index> {
        self.index.load_full()
    }

    /// Rebuild the whole index from the database and swap it in.
    pub async fn reload(&self) -> Result<()> {
        self.reload_from(None).await
    }

    /// [`Store::reload`], reading the skills through `mapped` when given (SQLite only).
    async fn reload_from(&self, mapped: Option<&sqlx::SqlitePool>) -> Result<()> {
        let _guard = self.index_lock.lock().await;
        let seen = on_db!(self, sync::max_event_id())?;
        let raw = match mapped {
            Some(pool) => crate::sql::skills::sqlite::load_all(pool).await?,
            None => on_db!(self, skills::load_all())?,
        };
        let generation = self.index.load().generation + 1;
        let guard = self.guard();
        let entries =
            raw.into_iter()
                .filter_map(|r| match to_entry(r, guard.as_deref(), &self.verified) {
                    Ok(e) => Some(e),
                    Err(e) => {
                        tracing::warn!(error = %e, "skipping an unreadable skill record");
                        None
                    }
                });
        self.index
            .store(Arc::new(Index::from_entries(entries, generation)));
        self.changed.send_modify(|g| *g += 1);
        *self.sync.lock().unwrap_or_else(|p| p.into_inner()) = SyncWindow::from(seen);
        drop(_guard);
        self.refresh_agents().await
    }

    /// Read one record again from the database into the index (another process may have
    /// written it since this one's copy was made): before a precondition is checked against it.
    pub async fn reread(&self, scope: &Scope, name: &str) -> Result<()> {
        self.refresh(scope, name).await
    }

    /// Bring committed writes into the index. The writes are done whatever happens here: a
    /// failure to read them back (a storage fault) must not answer a committed write as failed,
    /// so it is logged and the records are left to `sync_changes` (which re-reads every
    /// index-changing event it has not applied, this process's own included) or the next reload.
    pub(crate) async fn after_commit(&self, outcomes: &[crate::records::WriteOutcome]) {
        let done = if outcomes.len() > 64 {
            self.reload().await
        } else {
            let mut r = Ok(());
            for o in outcomes {
                r = r.and(self.refresh(&o.scope, &o.name).await);
            }
            r
        };
        if let Err(e) = done {
            tracing::warn!(error = %e, "a committed write is not in the index yet");
        }
    }

    /// The skill as it would be served at revision `rev`, active or not (its frontmatter,
    /// body and files; `active_rev` is `rev`): what `skillbase runs --by-revision` evaluates
    /// each revision's routing with.
    pub async fn entry_at(&self, scope: &Scope, name: &str, rev: i64) -> Result<SkillEntry> {
        let raw = on_db!(self, skills::load_at(&scope.to_string(), name, rev))?;
        let Some(raw) = raw else {
            let latest = self.index().get(scope, name).map_or(0, |e| e.head_rev);
            return Err(StoreError::NoSuchRevision {
                name: name.to_owned(),
                rev,
                latest,
            });
        };
        to_entry(raw, self.guard().as_deref(), &self.verified)
    }

    /// Re-read one record into the index (a record that does not read back, such as one whose
    /// SKILL.md no longer matches its digest, leaves the index, as in [`Store::reload`]).
    async fn refresh(&self, scope: &Scope, name: &str) -> Result<()> {
        let _guard = self.index_lock.lock().await;
        let raw = on_db!(self, skills::load_one(&scope.to_string(), name))?;
        let guard = self.guard();
        let entry = raw.and_then(|r| match to_entry(r, guard.as_deref(), &self.verified) {
            Ok(e) => Some(e),
            Err(e) => {
                tracing::warn!(error = %e, "skipping an unreadable skill record");
                None
            }
        });
        let next = self.index.load().with(scope, name, entry);
        self.index.store(Arc::new(next));
        self.changed.send_modify(|g| *g += 1);
        Ok(())
    }
}

fn to_entry(
    r: RawEntry,
    guard: Option<&dyn ContentGuard>,
    verified: &Verified,
) -> Result<SkillEntry> {
    // The SKILL.md read is the one SKILL.md wins over skill.md (`take_skill_md`).
    let md_file = r
        .files
        .iter()
        .find(|f| f.0 == "SKILL.md")
        .or_else(|| r.files.iter().find(|f| f.0 == "skill.md"));
    let matches = md_file.is_some_and(|(_, digest, ..)| {
        digest
            .parse::<skillbase_format::Digest>()
            .is_ok_and(|d| verified.check(&d, &r.skill_md))
    });
    if !matches {
        return Err(StoreError::Corrupt(format!(
            "skill '{}' ({}): revision {} does not match its digest (its SKILL.md was altered at rest); not served",
            r.name, r.scope, r.active_rev
        )));
    }
    let mut r = r;
    // Codex's file is read like SKILL.md: one altered at rest keeps the revision out.
    if let Some(bytes) = &r.codex {
        let intact = r
            .files
            .iter()
            .find(|f| f.0 == skillbase_format::openai_yaml::PATH)
            .and_then(|(_, digest, ..)| digest.parse::<skillbase_format::Digest>().ok())
            .is_some_and(|d| verified.check(&d, bytes));
        if !intact {
            return Err(StoreError::Corrupt(format!(
                "skill '{}' ({}): revision {} does not match its digest (its {} was altered at rest); not served",
                r.name,
                r.scope,
                r.active_rev,
                skillbase_format::openai_yaml::PATH
            )));
        }
    }
    let staged = r.candidate.take();
    let candidate_raw = r.candidate_entry.take();
    // One pass over SKILL.md tells whether anything of it needs scrubbing.
    let dirty = guard.filter(|g| g.scrub(&r.skill_md).is_some());
    let mut e = to_entry_raw(r)?;
    if let Some(g) = dirty {
        scrub_entry(g, &mut e);
    }
    // The staged candidate, read and checked as the active revision is; one that does not
    // read back is not served (the active revision is, to every session).
    if let (Some(terms), Some(raw)) = (staged, candidate_raw) {
        match serde_json::from_str::<crate::model::Candidate>(&terms)
            .map_err(|err| StoreError::Corrupt(format!("skill '{}': candidate: {err}", e.name)))
            .and_then(|terms| Ok((terms, to_entry(*raw, guard, verified)?)))
        {
            Ok((terms, c)) => e.candidate = Some((terms, Arc::new(c))),
            Err(err) => tracing::warn!(error = %err, "a staged candidate is not served"),
        }
    }
    Ok(e)
}

fn to_entry_raw(r: RawEntry) -> Result<SkillEntry> {
    let corrupt = |m: String| StoreError::Corrupt(format!("skill '{}' ({}): {m}", r.name, r.scope));
    let text = std::str::from_utf8(&r.skill_md).map_err(|e| corrupt(e.to_string()))?;
    let md = SkillMd::parse(text, &Default::default()).map_err(|e| corrupt(e.to_string()))?;
    let mut meta =
        SkillMeta::from_md(&md).ok_or_else(|| corrupt("missing name or description".into()))?;
    if let Some(bytes) = &r.codex {
        meta.with_codex_text(bytes);
    }
    let files = r
        .files
        .iter()
        .map(|(path, digest, exec, size)| {
            Ok(FileRef {
                path: path.clone(),
                digest: digest
                    .parse()
                    .map_err(|_| corrupt(format!("bad digest for {path}")))?,
                size: *size as u64,
                executable: *exec,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(SkillEntry {
        id: r.id,
        scope: r.scope.parse().map_err(corrupt)?,
        status: r.status.parse().map_err(corrupt)?,
        active_rev: r.active_rev,
        head_rev: r.head_rev,
        digest: r
            .digest
            .parse()
            .map_err(|_| corrupt("bad bundle digest".into()))?,
        author: r.author.clone(),
        body: md.body().to_owned(),
        frontmatter: Arc::new(
            match skillbase_format::yaml::Node::Map(md.frontmatter.clone()).to_typed_json() {
                serde_json::Value::Object(m) => m,
                _ => serde_json::Map::new(),
            },
        ),
        meta,
        files,
        seed_path: r.seed_path.clone(),
        updated_at: r.updated_at,
        lines: Arc::new(crate::index::SourceLines::of(text, &md)),
        candidate: None,
        signer: r.signer.clone(),
        name: r.name,
    })
}
