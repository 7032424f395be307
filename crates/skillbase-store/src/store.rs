//! The store: one API over both backends, with the in-memory index kept current.

use crate::db::{Db, DbUrl};
use crate::error::{Result, StoreError};
use crate::index::{FileRef, Index, SkillEntry};
use crate::model::{Agent, AgentConfig, AgentName, Author, Scope, StatusChange};
use crate::sql::{
    self, ActivationRecord, EventFilter, EventRecord, NewEvent, RawEntry, RevisionInfo, RunRecord,
    SessionRecord, TokenRecord, VaultRow, WriteOutcome, WriteReq,
};
use arc_swap::ArcSwap;
use skillbase_format::validate::{Profile, ValidateOptions, validate_text};
use skillbase_format::{Bundle, BundleFile, BundleLimits, BundlePath, Digest, SkillMd, SkillMeta};
use std::sync::Arc;

macro_rules! on_db {
    ($self:expr, $f:ident ( $($arg:expr),* )) => {
        match &$self.db {
            Db::Sqlite(p) => sql::sqlite::$f(p, $($arg),*).await,
            Db::Postgres(p) => sql::postgres::$f(p, $($arg),*).await,
        }
    };
}

/// What the vault asks of the store, installed with [`Store::set_content_guard`]: refuse every
/// revision whose files or message hold a secret, and scrub secrets from stored content before
/// it is served (a value set *after* a revision already held it). Every read of stored content —
/// the index (bodies, descriptions, frontmatter: turns, `load_skill`, listings), [`Store::bundle`]
/// (show, export, diff, `resources/read`, the CLI), [`Store::history`] and [`Store::events`] —
/// goes through [`ContentGuard::scrub`], so no surface can forget it.
pub trait ContentGuard: Send + Sync {
    /// Why `bundle` and `message` may not be written, if they may not.
    fn check(&self, bundle: &Bundle, message: &str) -> std::result::Result<(), String>;
    /// `bytes` with every secret replaced, or `None` when it holds none.
    fn scrub(&self, bytes: &[u8]) -> Option<Vec<u8>>;
}

/// An installed [`ContentGuard`].
pub type WriteGuard = Arc<dyn ContentGuard>;

/// A write of one skill.
#[derive(Debug, Clone)]
pub struct PutRequest {
    pub scope: Scope,
    pub bundle: Bundle,
    pub author: Author,
    pub message: String,
    /// Fail with a conflict unless the latest revision is this one (0: the skill must not exist).
    pub expect_rev: Option<i64>,
}

/// What an import did, per skill.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ImportReport {
    pub created: Vec<String>,
    pub changed: Vec<String>,
    pub unchanged: Vec<String>,
    pub outcomes: Vec<WriteOutcome>,
}

/// The skills store.
pub struct Store {
    db: Db,
    index: ArcSwap<Index>,
    agent_cache: ArcSwap<std::collections::HashMap<AgentName, Arc<Agent>>>,
    write_guard: ArcSwap<Option<WriteGuard>>,
    /// Serialises index swaps so a slower writer never overwrites a newer state.
    index_lock: tokio::sync::Mutex<()>,
    /// The events `sync_changes` has applied, and what it looks back over (late commits on
    /// PostgreSQL).
    sync: std::sync::Mutex<SyncWindow>,
    /// Ticks after every index swap and agent refresh (servers notify clients from it).
    changed: tokio::sync::watch::Sender<u64>,
    pub limits: BundleLimits,
}

impl Store {
    /// Open the database (creating and migrating it) and load the index.
    pub async fn open(url: &DbUrl) -> Result<Store> {
        let db = Db::open(url).await?;
        let store = Store {
            db,
            index: ArcSwap::from_pointee(Index::default()),
            agent_cache: ArcSwap::from_pointee(std::collections::HashMap::new()),
            write_guard: ArcSwap::from_pointee(None),
            index_lock: tokio::sync::Mutex::new(()),
            sync: std::sync::Mutex::new(SyncWindow::default()),
            changed: tokio::sync::watch::Sender::new(0),
            limits: BundleLimits::default(),
        };
        store.reload().await?;
        Ok(store)
    }

    pub fn backend(&self) -> &'static str {
        self.db.backend()
    }

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
        let _guard = self.index_lock.lock().await;
        let seen = on_db!(self, max_event_id())?;
        let raw = on_db!(self, load_all())?;
        let generation = self.index.load().generation + 1;
        let guard = self.guard();
        let entries = raw
            .into_iter()
            .filter_map(|r| match to_entry(r, guard.as_deref()) {
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

    /// Re-read one record into the index.
    async fn refresh(&self, scope: &Scope, name: &str) -> Result<()> {
        let _guard = self.index_lock.lock().await;
        let raw = on_db!(self, load_one(&scope.to_string(), name))?;
        let guard = self.guard();
        let entry = raw.map(|r| to_entry(r, guard.as_deref())).transpose()?;
        let next = self.index.load().with(scope, name, entry);
        self.index.store(Arc::new(next));
        self.changed.send_modify(|g| *g += 1);
        Ok(())
    }

    /// Apply writes made by other processes (other servers on the same PostgreSQL): reads the
    /// events since the last one seen that can change the index or the agents (not the
    /// runtime's call, activation and turn events) and refreshes the records they touched.
    /// Returns how many records were refreshed.
    ///
    /// On PostgreSQL ids are handed out before commit, so a transaction can commit after another
    /// one with a higher id has been seen. Each call therefore looks back over the last
    /// [`SYNC_LOOKBACK`] of ids as well and applies what it had not applied yet (a partial index
    /// on the index-changing kinds keeps that cheap, however many call events there are).
    pub async fn sync_changes(&self) -> Result<usize> {
        const LIMIT: usize = 10_000;
        let floor = self
            .sync
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .floor(std::time::Instant::now());
        // Only the kinds that can change the index or the agents: a busy server writes tens of
        // thousands of call and activation events a second, and none of them needs reading here.
        let (events, newest) = on_db!(self, index_changes(floor, LIMIT as i64))?;
        if events.len() >= LIMIT {
            // More than a page of writes (a bulk import): read everything again.
            self.reload().await?;
            return Ok(self.index().len());
        }
        let events: Vec<_> = {
            let w = self.sync.lock().unwrap_or_else(|p| p.into_inner());
            events
                .into_iter()
                .filter(|(id, ..)| !w.applied.contains(id))
                .collect()
        };
        let mut touched: Vec<(Scope, String)> = Vec::new();
        if events.iter().any(|(_, kind, _, _)| kind == "agent_changed") {
            self.refresh_agents().await?;
        }
        for (_, _, scope, skill) in &events {
            if let (Some(scope), Some(skill)) = (scope, skill)
                && let Ok(scope) = scope.parse::<Scope>()
                && !touched.iter().any(|(s, n)| *s == scope && n == skill)
            {
                touched.push((scope, skill.clone()));
            }
        }
        for (scope, name) in &touched {
            self.refresh(scope, name).await?;
        }
        // Applied: not again while they are in the window (an error above leaves them to the
        // next call).
        {
            let mut w = self.sync.lock().unwrap_or_else(|p| p.into_inner());
            w.applied.extend(events.iter().map(|(id, ..)| *id));
            w.mark(std::time::Instant::now(), newest);
        }
        Ok(touched.len())
    }

    /// Check a bundle as a skill: its SKILL.md must pass the Skillbase profile.
    pub fn check_bundle(bundle: &Bundle) -> Result<(String, SkillMeta)> {
        let md = bundle.skill_md();
        let text = std::str::from_utf8(&md.bytes).map_err(|e| {
            StoreError::InvalidSkill(format!(
                "{} is not valid UTF-8 (invalid byte at offset {})",
                md.path,
                e.valid_up_to()
            ))
        })?;
        let report = validate_text(
            text,
            md.path.as_str(),
            None,
            &ValidateOptions {
                profile: Profile::Skillbase,
                ..ValidateOptions::default()
            },
        );
        if !report.is_valid() {
            let msgs: Vec<String> = report
                .errors()
                .map(|d| match &d.hint {
                    Some(h) => format!("{} ({h})", d.message),
                    None => d.message.clone(),
                })
                .collect();
            return Err(StoreError::InvalidSkill(msgs.join("; ")));
        }
        let parsed = SkillMd::parse(text, &Default::default())
            .map_err(|e| StoreError::InvalidSkill(e.to_string()))?;
        let meta = SkillMeta::from_md(&parsed)
            .ok_or_else(|| StoreError::InvalidSkill("missing name or description".into()))?;
        Ok((meta.name.clone(), meta))
    }

    fn write_req(
        &self,
        req: PutRequest,
        seed_path: Option<String>,
        pending: bool,
    ) -> Result<WriteReq> {
        let (name, _) = Self::check_bundle(&req.bundle)?;
        crate::model::check_message(&req.message).map_err(StoreError::Invalid)?;
        if let Some(guard) = self.write_guard.load().as_ref() {
            guard
                .check(&req.bundle, &req.message)
                .map_err(|why| StoreError::InvalidSkill(format!("{name}: {why}")))?;
        }
        Ok(WriteReq {
            scope: req.scope,
            name,
            bundle: req.bundle,
            author: req.author.to_string(),
            message: req.message,
            expect_rev: req.expect_rev,
            seed_path,
            pending,
        })
    }

    /// Create or modify a skill. A bundle equal to the active one is a no-op.
    pub async fn put(&self, req: PutRequest) -> Result<WriteOutcome> {
        let w = self.write_req(req, None, false)?;
        self.write_one(w).await
    }

    /// Write a revision that waits for approval (the approval policy).
    pub async fn put_pending(&self, req: PutRequest) -> Result<WriteOutcome> {
        let w = self.write_req(req, None, true)?;
        self.write_one(w).await
    }

    pub(crate) async fn put_seed(
        &self,
        req: PutRequest,
        seed_path: String,
    ) -> Result<WriteOutcome> {
        let w = self.write_req(req, Some(seed_path), false)?;
        self.write_one(w).await
    }

    /// Create several seeded skills in one transaction (all or nothing: the caller falls back
    /// to one by one if any fails).
    pub(crate) async fn put_seeds(
        &self,
        reqs: Vec<(PutRequest, String)>,
    ) -> Result<Vec<WriteOutcome>> {
        let writes = reqs
            .into_iter()
            .map(|(r, p)| self.write_req(r, Some(p), false))
            .collect::<Result<Vec<_>>>()?;
        let outcomes = on_db!(self, write_many(&writes, None, &|_| {}))?;
        if outcomes.len() > 64 {
            self.reload().await?;
        } else {
            for o in &outcomes {
                self.refresh(&o.scope, &o.name).await?;
            }
        }
        Ok(outcomes)
    }

    async fn write_one(&self, w: WriteReq) -> Result<WriteOutcome> {
        // Two writers creating the same new skill at once: the loser retries as a modification.
        let mut attempt = 0;
        let out = loop {
            attempt += 1;
            let r = on_db!(self, write_many(std::slice::from_ref(&w), None, &|_| {}));
            match r {
                Err(e) if attempt < 3 && e.is_unique_violation() => continue,
                other => break other?,
            }
        };
        let o = out.into_iter().next().expect("one outcome per request");
        self.refresh(&o.scope, &o.name).await?;
        Ok(o)
    }

    /// Import many skills into one scope in a single transaction: all land or none do. With an
    /// agent scope, that agent's allowlist becomes exactly the imported skills (the agent is
    /// created if needed); nothing else changes.
    pub async fn import(
        &self,
        scope: &Scope,
        bundles: Vec<Bundle>,
        author: &Author,
        message: &str,
        progress: &(dyn Fn(usize) + Sync),
    ) -> Result<ImportReport> {
        let mut reqs = Vec::with_capacity(bundles.len());
        let mut names = Vec::with_capacity(bundles.len());
        let mut seen = std::collections::HashSet::with_capacity(bundles.len());
        for bundle in bundles {
            let w = self.write_req(
                PutRequest {
                    scope: scope.clone(),
                    bundle,
                    author: author.clone(),
                    message: message.to_owned(),
                    expect_rev: None,
                },
                None,
                false,
            )?;
            // A set, not `names.contains`: that was quadratic (50M comparisons for 10k skills).
            if !seen.insert(w.name.clone()) {
                return Err(StoreError::Invalid(format!(
                    "the import holds two skills named '{}'",
                    w.name
                )));
            }
            names.push(w.name.clone());
            reqs.push(w);
        }
        let agent_update = match scope {
            Scope::Agent(a) => {
                let mut config = self.agent(a).await?.map(|x| x.config).unwrap_or_default();
                let mut list: Vec<skillbase_format::SkillName> = names
                    .iter()
                    .filter_map(|n| skillbase_format::SkillName::parse(n).ok())
                    .collect();
                list.sort();
                config.skills = crate::model::NameSet::Names(list);
                Some((a.clone(), config))
            }
            Scope::Shared => None,
        };
        let outcomes = match &self.db {
            Db::Sqlite(p) => {
                sql::sqlite::write_many(
                    p,
                    &reqs,
                    agent_update.as_ref().map(|(a, c)| (a, c)),
                    progress,
                )
                .await?
            }
            Db::Postgres(p) => {
                sql::postgres::write_many(
                    p,
                    &reqs,
                    agent_update.as_ref().map(|(a, c)| (a, c)),
                    progress,
                )
                .await?
            }
        };
        if agent_update.is_some() {
            self.refresh_agents().await?;
        }
        if outcomes.len() > 64 {
            self.reload().await?;
        } else {
            for o in &outcomes {
                self.refresh(&o.scope, &o.name).await?;
            }
        }
        let mut report = ImportReport::default();
        for o in &outcomes {
            match o.kind {
                sql::WriteKind::Created => report.created.push(o.name.clone()),
                sql::WriteKind::Unchanged => report.unchanged.push(o.name.clone()),
                _ => report.changed.push(o.name.clone()),
            }
        }
        report.outcomes = outcomes;
        Ok(report)
    }

    /// Re-activate revision `rev` (recorded as an event; history is never rewritten).
    pub async fn revert(
        &self,
        scope: &Scope,
        name: &str,
        rev: i64,
        actor: &Author,
    ) -> Result<WriteOutcome> {
        let o = on_db!(self, revert(scope, name, rev, &actor.to_string()))?;
        self.refresh(scope, name).await?;
        Ok(o)
    }

    /// Approve a pending revision.
    pub async fn approve(
        &self,
        scope: &Scope,
        name: &str,
        rev: i64,
        actor: &Author,
    ) -> Result<WriteOutcome> {
        let o = on_db!(self, approve(scope, name, rev, &actor.to_string()))?;
        self.refresh(scope, name).await?;
        Ok(o)
    }

    /// Change a skill's status: retire and restore (soft delete), disable and enable.
    pub async fn set_status(
        &self,
        scope: &Scope,
        name: &str,
        change: StatusChange,
        actor: &Author,
        reason: serde_json::Value,
    ) -> Result<WriteOutcome> {
        self.set_status_if(scope, name, change, actor, reason, None)
            .await
    }

    /// [`Store::set_status`], refused with a conflict (and nothing changed) unless the latest
    /// revision is `expect_rev` — checked inside the write's transaction.
    pub async fn set_status_if(
        &self,
        scope: &Scope,
        name: &str,
        change: StatusChange,
        actor: &Author,
        reason: serde_json::Value,
        expect_rev: Option<i64>,
    ) -> Result<WriteOutcome> {
        let o = on_db!(
            self,
            set_status(scope, name, change, &actor.to_string(), &reason, expect_rev)
        )?;
        self.refresh(scope, name).await?;
        Ok(o)
    }

    /// Every revision of a skill, oldest first.
    pub async fn history(&self, scope: &Scope, name: &str) -> Result<Vec<RevisionInfo>> {
        let mut h = on_db!(self, history(scope, name))?;
        if let Some(g) = self.guard() {
            for r in &mut h {
                scrub_string(&*g, &mut r.message);
            }
        }
        Ok(h)
    }

    /// The bundle of a revision (the active one when `rev` is `None`).
    pub async fn bundle(
        &self,
        scope: &Scope,
        name: &str,
        rev: Option<i64>,
    ) -> Result<(RevisionInfo, Bundle)> {
        let history = self.history(scope, name).await?;
        let latest = history.last().map_or(0, |r| r.rev);
        let info = match rev {
            None => history.into_iter().find(|r| r.active),
            Some(n) => history.into_iter().find(|r| r.rev == n),
        }
        .ok_or_else(|| StoreError::NoSuchRevision {
            name: name.to_owned(),
            rev: rev.unwrap_or(0),
            latest,
        })?;
        let files = on_db!(self, revision_files(scope, name, info.rev))?;
        let mut list = Vec::with_capacity(files.len());
        for (path, executable, bytes) in files {
            let digest = Digest::of(&bytes);
            list.push(BundleFile {
                path: BundlePath::parse(&path).map_err(|e| StoreError::Corrupt(e.to_string()))?,
                bytes: bytes.into(),
                digest,
                executable,
            });
        }
        // Stored bundles were checked on write; limits are not re-applied to history.
        let unlimited = BundleLimits {
            max_files: usize::MAX,
            max_total_bytes: u64::MAX,
            max_depth: usize::MAX,
            ..BundleLimits::default()
        };
        let bundle =
            Bundle::from_files(list, &unlimited).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        if bundle.digest().to_string() != info.digest {
            return Err(StoreError::Corrupt(format!(
                "revision {} of '{name}' does not match its digest",
                info.rev
            )));
        }
        // Checked as stored, served scrubbed: a file holding a value set since it was written
        // is served with the value replaced (and so with its own digest).
        let Some(g) = self.guard() else {
            return Ok((info, bundle));
        };
        // Each file scrubbed once; the bundle is rebuilt only when one of them changed.
        let scrubbed: Vec<Option<Vec<u8>>> =
            bundle.files().iter().map(|f| g.scrub(&f.bytes)).collect();
        if scrubbed.iter().all(Option::is_none) {
            return Ok((info, bundle));
        }
        let files = bundle
            .files()
            .iter()
            .zip(scrubbed)
            .map(|(f, s)| match s {
                Some(b) => BundleFile {
                    path: f.path.clone(),
                    digest: Digest::of(&b),
                    bytes: b.into(),
                    executable: f.executable,
                },
                None => f.clone(),
            })
            .collect();
        let bundle = Bundle::from_files(files, &unlimited)
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        Ok((info, bundle))
    }

    /// A unified diff of every file between two revisions.
    pub async fn diff(&self, scope: &Scope, name: &str, a: i64, b: i64) -> Result<String> {
        let (_, left) = self.bundle(scope, name, Some(a)).await?;
        let (_, right) = self.bundle(scope, name, Some(b)).await?;
        Ok(crate::diff::unified(&left, &right, a, b))
    }

    /// An agent.
    pub async fn agent(&self, name: &AgentName) -> Result<Option<Agent>> {
        Ok(self.agents().await?.into_iter().find(|a| a.name == *name))
    }

    /// Every agent, by name.
    pub async fn agents(&self) -> Result<Vec<Agent>> {
        let rows = on_db!(self, agents())?;
        rows.into_iter()
            .map(|(name, config, version)| {
                Ok(Agent {
                    name: AgentName::parse(&name).map_err(StoreError::Corrupt)?,
                    config: serde_json::from_str(&config)
                        .map_err(|e| StoreError::Corrupt(format!("agent '{name}': {e}")))?,
                    version,
                })
            })
            .collect()
    }

    /// Create an agent (fails if it exists).
    pub async fn create_agent(&self, name: &AgentName, config: &AgentConfig) -> Result<i64> {
        let config = &config
            .clone()
            .checked()
            .map_err(|e| StoreError::InvalidAgent(format!("agent '{name}': {e}")))?;
        let v = on_db!(self, upsert_agent(name, config, true))?;
        self.refresh_agents().await?;
        Ok(v)
    }

    /// Create or replace an agent's configuration.
    pub async fn set_agent(&self, name: &AgentName, config: &AgentConfig) -> Result<i64> {
        let config = &config
            .clone()
            .checked()
            .map_err(|e| StoreError::InvalidAgent(format!("agent '{name}': {e}")))?;
        let v = on_db!(self, upsert_agent(name, config, false))?;
        self.refresh_agents().await?;
        Ok(v)
    }

    /// Create a session for `agent` if it does not exist; refuses a session owned by another
    /// agent.
    pub async fn open_session(&self, id: &str, agent: &AgentName) -> Result<()> {
        if id.is_empty()
            || id.len() > 128
            || id.chars().any(|c| c.is_control() || c == '/' || c == '\\')
        {
            return Err(StoreError::Invalid(format!(
                "invalid session id '{id}': 1-128 characters, no slashes or control characters"
            )));
        }
        if !crate::error::session_id_usable(id, agent.as_str()) {
            return Err(StoreError::SessionUnavailable);
        }
        let owner = on_db!(self, open_session(id, agent.as_str()))?;
        if owner != agent.as_str() {
            return Err(StoreError::SessionUnavailable);
        }
        Ok(())
    }

    /// A stored session with its activations.
    pub async fn session(&self, id: &str) -> Result<Option<SessionRecord>> {
        on_db!(self, session(id))
    }

    /// Record that a skill was activated in a session.
    pub async fn record_activation(&self, session: &str, a: &ActivationRecord) -> Result<()> {
        on_db!(self, record_activation(session, a))
    }

    /// Record the activations of one load and their events in one transaction.
    pub async fn record_activations(
        &self,
        session: &str,
        acts: &[ActivationRecord],
        events: &[NewEvent],
    ) -> Result<()> {
        on_db!(self, record_activations(session, acts, events))
    }

    /// [`Store::record_activations`], and open a run of `run` (the skill that now drives the
    /// session, ending its open run) in the same transaction; returns the run's id.
    pub async fn record_activations_and_run(
        &self,
        session: &str,
        acts: &[ActivationRecord],
        events: &[NewEvent],
        run: Option<(&AgentName, &SkillEntry)>,
    ) -> Result<Option<i64>> {
        let scope = run.map(|(_, e)| e.scope.to_string());
        let start = run
            .zip(scope.as_deref())
            .map(|((agent, e), scope)| crate::sql::RunStart {
                agent: agent.as_str(),
                skill_id: e.id,
                scope,
                skill: &e.name,
                rev: e.active_rev,
            });
        on_db!(
            self,
            record_activations_and_run(session, acts, events, start.as_ref())
        )
    }

    /// Append several events in one transaction.
    pub async fn append_events(&self, evs: &[NewEvent]) -> Result<()> {
        self.append_events_and_count(evs, &[]).await
    }

    /// Append several events and add calls to runs' `calls` counters (`(run, calls)`), in one
    /// transaction (the dispatcher's write-behind batch).
    pub async fn append_events_and_count(
        &self,
        evs: &[NewEvent],
        counts: &[(i64, u32)],
    ) -> Result<()> {
        if evs.is_empty() && counts.is_empty() {
            return Ok(());
        }
        on_db!(self, append_events_and_count(evs, counts))
    }

    /// An agent from the in-memory cache (no database round trip).
    pub fn agent_cached(&self, name: &AgentName) -> Option<Arc<Agent>> {
        self.agent_cache.load().get(name).cloned()
    }

    async fn refresh_agents(&self) -> Result<()> {
        let all = self.agents().await?;
        self.agent_cache.store(Arc::new(
            all.into_iter()
                .map(|a| (a.name.clone(), Arc::new(a)))
                .collect(),
        ));
        self.changed.send_modify(|g| *g += 1);
        Ok(())
    }

    /// Record an API token by the SHA-256 of its secret (the caller generates the secret and
    /// shows it once). `agent: None` makes an admin token.
    pub async fn token_create(
        &self,
        label: &str,
        hash: &str,
        agent: Option<&AgentName>,
        actor: &Author,
    ) -> Result<TokenRecord> {
        if label.len() > 200 || label.chars().any(char::is_control) {
            return Err(StoreError::Invalid(
                "token label: at most 200 characters, no control characters".into(),
            ));
        }
        if let Some(a) = agent
            && self.agent(a).await?.is_none()
        {
            return Err(StoreError::AgentNotFound(a.to_string()));
        }
        on_db!(
            self,
            token_create(
                label,
                hash,
                agent.map(AgentName::as_str),
                &actor.to_string()
            )
        )
    }

    /// Every API token (hashes only), revoked ones included.
    pub async fn tokens(&self) -> Result<Vec<TokenRecord>> {
        on_db!(self, tokens())
    }

    /// The token whose secret hashes to `hash`, revoked or not.
    pub async fn token_by_hash(&self, hash: &str) -> Result<Option<TokenRecord>> {
        on_db!(self, token_by_hash(hash))
    }

    /// Revoke a token; false if it did not exist or was already revoked.
    pub async fn token_revoke(&self, id: i64, actor: &Author) -> Result<bool> {
        on_db!(self, token_revoke(id, &actor.to_string()))
    }

    /// Store an encrypted vault entry (the store never sees the value in clear).
    pub async fn vault_put(&self, row: &VaultRow, actor: &Author) -> Result<()> {
        on_db!(self, vault_put(row, &actor.to_string()))
    }

    /// Remove a vault entry; false if it did not exist.
    pub async fn vault_remove(&self, name: &str, actor: &Author) -> Result<bool> {
        on_db!(self, vault_remove(name, &actor.to_string()))
    }

    /// Every vault entry, encrypted.
    pub async fn vault_all(&self) -> Result<Vec<VaultRow>> {
        on_db!(self, vault_all())
    }

    /// Install the vault's guard: every bundle is checked before it is written, and stored
    /// content is scrubbed as it is read (see [`ContentGuard`]). Call [`Store::reload`] after the
    /// guard's secrets change, so the index is scrubbed of new ones.
    pub fn set_content_guard(&self, guard: WriteGuard) {
        self.write_guard.store(Arc::new(Some(guard)));
    }

    fn guard(&self) -> Option<WriteGuard> {
        self.write_guard.load().as_ref().clone()
    }

    /// Open a run of a skill revision in a session (ending the session's previous open run as
    /// superseded: another skill took over).
    pub async fn start_run(
        &self,
        session: &str,
        agent: &AgentName,
        entry: &SkillEntry,
    ) -> Result<i64> {
        let scope = entry.scope.to_string();
        let run = crate::sql::RunStart {
            agent: agent.as_str(),
            skill_id: entry.id,
            scope: &scope,
            skill: &entry.name,
            rev: entry.active_rev,
        };
        on_db!(self, start_run(session, &run))
    }

    /// The session's open run: the skill driving it, if any.
    pub async fn open_run(&self, session: &str) -> Result<Option<RunRecord>> {
        on_db!(self, open_run(session))
    }

    /// Count a call made under a run.
    pub async fn count_call(&self, run: i64, failed: bool) -> Result<()> {
        on_db!(self, count_call(run, failed))
    }

    /// End a run with its outcome; returns the run and how many runs of that revision in a row
    /// have failed.
    pub async fn end_run(&self, run: i64, outcome: &str, note: &str) -> Result<(RunRecord, i64)> {
        on_db!(self, end_run(run, outcome, note))
    }

    /// Recent runs of a skill, newest first.
    pub async fn runs(&self, scope: &Scope, name: &str, limit: i64) -> Result<Vec<RunRecord>> {
        on_db!(self, runs(&scope.to_string(), name, limit))
    }

    /// A session's note block.
    pub async fn note(&self, session: &str) -> Result<String> {
        on_db!(self, note(session))
    }

    /// Replace a session's note block.
    pub async fn set_note(&self, session: &str, text: &str) -> Result<()> {
        on_db!(self, set_note(session, text))
    }

    /// Append an event.
    pub async fn append_event(&self, ev: &NewEvent) -> Result<()> {
        on_db!(self, append_event(ev))
    }

    /// Read events.
    pub async fn events(&self, filter: &EventFilter) -> Result<Vec<EventRecord>> {
        let mut evs = on_db!(self, events(filter))?;
        if let Some(g) = self.guard() {
            for e in &mut evs {
                scrub_json(&*g, &mut e.data);
            }
        }
        Ok(evs)
    }

    pub(crate) async fn mark_diverged(
        &self,
        scope: &Scope,
        name: &str,
        seed_path: &str,
        digest: &str,
    ) -> Result<bool> {
        on_db!(self, mark_diverged(scope, name, seed_path, digest))
    }
}

/// A string scrubbed in place.
fn scrub_string(g: &dyn ContentGuard, s: &mut String) {
    if let Some(b) = g.scrub(s.as_bytes()) {
        *s = String::from_utf8_lossy(&b).into_owned();
    }
}

/// Every string of a JSON value (keys too) scrubbed in place.
fn scrub_json(g: &dyn ContentGuard, v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::String(s) => scrub_string(g, s),
        Value::Array(a) => a.iter_mut().for_each(|x| scrub_json(g, x)),
        Value::Object(o) => {
            if o.keys().any(|k| g.scrub(k.as_bytes()).is_some()) {
                let old = std::mem::take(o);
                for (mut k, x) in old {
                    scrub_string(g, &mut k);
                    o.insert(k, x);
                }
            }
            o.values_mut().for_each(|x| scrub_json(g, x));
        }
        _ => {}
    }
}

/// The text fields of a parsed skill scrubbed (what turns, `load_skill`, listings and the MCP
/// manifests serve from the index).
fn scrub_entry(g: &dyn ContentGuard, e: &mut SkillEntry) {
    scrub_string(g, &mut e.body);
    scrub_string(g, &mut e.meta.description);
    for t in &mut e.meta.triggers {
        scrub_string(g, t);
    }
    for (_, v) in &mut e.meta.metadata {
        scrub_string(g, v);
    }
    for s in [
        &mut e.meta.license,
        &mut e.meta.compatibility,
        &mut e.meta.allowed_tools,
    ]
    .into_iter()
    .flatten()
    {
        scrub_string(g, s);
    }
    if let Some(i) = &mut e.meta.inputs {
        scrub_json(g, i);
    }
    let mut fm = serde_json::Value::Object((*e.frontmatter).clone());
    scrub_json(g, &mut fm);
    if let serde_json::Value::Object(m) = fm {
        e.frontmatter = Arc::new(m);
    }
}

fn to_entry(r: RawEntry, guard: Option<&dyn ContentGuard>) -> Result<SkillEntry> {
    // One pass over SKILL.md tells whether anything of it needs scrubbing.
    let dirty = guard.filter(|g| g.scrub(&r.skill_md).is_some());
    let mut e = to_entry_raw(r)?;
    if let Some(g) = dirty {
        scrub_entry(g, &mut e);
    }
    Ok(e)
}

fn to_entry_raw(r: RawEntry) -> Result<SkillEntry> {
    let corrupt = |m: String| StoreError::Corrupt(format!("skill '{}' ({}): {m}", r.name, r.scope));
    let text = std::str::from_utf8(&r.skill_md).map_err(|e| corrupt(e.to_string()))?;
    let md = SkillMd::parse(text, &Default::default()).map_err(|e| corrupt(e.to_string()))?;
    let meta =
        SkillMeta::from_md(&md).ok_or_else(|| corrupt("missing name or description".into()))?;
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
        name: r.name,
    })
}

/// How far back `sync_changes` looks for events committed after newer ones were seen.
pub const SYNC_LOOKBACK: std::time::Duration = std::time::Duration::from_secs(60);

/// The ids `sync_changes` has looked at: marks of the newest id by time, and the index-changing
/// events applied within the look-back window (few: writes, not calls).
#[derive(Default)]
struct SyncWindow {
    /// The newest id as of at least `SYNC_LOOKBACK` ago: everything at or below it is settled.
    settled: i64,
    /// (when, newest id then), oldest first.
    marks: std::collections::VecDeque<(std::time::Instant, i64)>,
    /// Index-changing events above `settled` already applied.
    applied: std::collections::BTreeSet<i64>,
}

impl SyncWindow {
    fn from(seen: i64) -> SyncWindow {
        SyncWindow {
            settled: seen,
            ..SyncWindow::default()
        }
    }

    /// The id to read from: marks older than the window settle.
    fn floor(&mut self, now: std::time::Instant) -> i64 {
        while let Some(&(at, id)) = self.marks.front() {
            if now.duration_since(at) < SYNC_LOOKBACK {
                break;
            }
            self.settled = self.settled.max(id);
            self.marks.pop_front();
        }
        let settled = self.settled;
        self.applied.retain(|&id| id > settled);
        settled
    }

    fn mark(&mut self, now: std::time::Instant, newest: i64) {
        // One mark a second is plenty (the loop runs every second).
        if self
            .marks
            .back()
            .is_none_or(|&(at, _)| now.duration_since(at) >= std::time::Duration::from_millis(500))
        {
            self.marks.push_back((now, newest));
        }
    }
}

#[cfg(test)]
mod sync_window_tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn ids_settle_after_the_look_back_window() {
        let t0 = Instant::now();
        let mut w = SyncWindow::from(10);
        assert_eq!(w.floor(t0), 10);
        w.applied.extend([12, 15]);
        w.mark(t0, 15);
        // Within the window: still read from 10, the applied ids are remembered.
        w.mark(t0 + Duration::from_millis(100), 16); // too soon for a second mark
        w.mark(t0 + Duration::from_secs(1), 20);
        assert_eq!(w.floor(t0 + Duration::from_secs(30)), 10);
        assert!(w.applied.contains(&12));
        // A minute on, the first mark settles: read from 15, forget what is at or below it.
        assert_eq!(w.floor(t0 + SYNC_LOOKBACK), 15);
        assert_eq!(
            w.applied.iter().copied().collect::<Vec<_>>(),
            Vec::<i64>::new()
        );
        assert_eq!(w.floor(t0 + SYNC_LOOKBACK + Duration::from_secs(1)), 20);
        assert!(w.marks.is_empty());
    }
}
