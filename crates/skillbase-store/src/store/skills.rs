//! Skills: checking and writing revisions (one, seeds, imports), revert and approval, status
//! changes, history, bundles and diffs.

use super::Store;
use super::guard::scrub_string;
use crate::config::VersionPolicy;
use crate::error::{Result, StoreError};
use crate::model::{Author, Scope, StatusChange};
use crate::records::{RevisionInfo, WriteKind, WriteOutcome, WriteReq};
use skillbase_format::validate::{Profile, ValidateOptions, validate_text};
use skillbase_format::{Bundle, BundleFile, BundleLimits, BundlePath, Digest, SkillMd, SkillMeta};

/// A write of one skill.
#[derive(Debug, Clone)]
pub struct PutRequest {
    /// Where the skill lives.
    pub scope: Scope,
    /// Its files (SKILL.md names it).
    pub bundle: Bundle,
    /// Who writes it.
    pub author: Author,
    /// Why, in the author's words (`model::check_message`).
    pub message: String,
    /// Fail with a conflict unless the latest revision is this one (0: the skill must not exist).
    pub expect_rev: Option<i64>,
    /// The skill's signature (its `SKILL.sig`), verified against the bundle before anything is
    /// written and kept with the revision.
    pub signature: Option<Box<skillbase_format::signature::Signature>>,
}

/// How a staged candidate ends ([`Store::settle_candidate`]).
#[derive(Debug, Clone)]
pub struct Settlement<'a> {
    /// The candidate revision.
    pub rev: i64,
    /// Promoted (`true`: it becomes the active revision) or rejected.
    pub promote: bool,
    /// Who decided.
    pub actor: &'a Author,
    /// The agent whose run decided, when one did (the event names it).
    pub agent: Option<&'a crate::model::AgentName>,
    /// The evidence, kept in the event: both revisions' counts and the reason.
    pub data: serde_json::Value,
}

/// What an import did, per skill.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ImportReport {
    /// The skills the import created.
    pub created: Vec<String>,
    /// The skills it gave a new revision.
    pub changed: Vec<String>,
    /// The skills it found as they were.
    pub unchanged: Vec<String>,
    /// Every write's outcome, in the import's order.
    pub outcomes: Vec<WriteOutcome>,
}

impl Store {
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
        let opts = ValidateOptions {
            profile: Profile::Skillbase,
            ..ValidateOptions::default()
        };
        let mut report = validate_text(text, md.path.as_str(), None, &opts);
        let sidecar = bundle.get(skillbase_format::openai_yaml::PATH);
        if let Some(f) = sidecar {
            report
                .diagnostics
                .extend(skillbase_format::validate::codex_diagnostics(
                    &f.bytes, &opts,
                ));
        }
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
        let mut meta = SkillMeta::from_md(&parsed)
            .ok_or_else(|| StoreError::InvalidSkill("missing name or description".into()))?;
        if let Some(f) = sidecar {
            meta.with_codex_text(&f.bytes);
        }
        Ok((meta.name.clone(), meta))
    }

    fn write_req(
        &self,
        req: PutRequest,
        seed_path: Option<String>,
        pending: bool,
        names: Option<&skillbase_scan::SkillNames<'_>>,
    ) -> Result<WriteReq> {
        self.write_req_staged(req, seed_path, pending, None, names)
    }

    /// Check a write and pass it through the scanning gate (`names`: the store's skills, for
    /// the name-imitation rule, indexed once for a batch; `None`: those near this one's name):
    /// the one path every revision takes.
    fn write_req_staged(
        &self,
        req: PutRequest,
        seed_path: Option<String>,
        pending: bool,
        candidate: Option<crate::model::Candidate>,
        names: Option<&skillbase_scan::SkillNames<'_>>,
    ) -> Result<WriteReq> {
        let (name, meta) = Self::check_bundle(&req.bundle)?;
        crate::model::check_message(&req.message).map_err(StoreError::Invalid)?;
        let signature = match &req.signature {
            None => None,
            Some(sig) => {
                sig.verify(
                    &name,
                    meta.version.as_deref(),
                    &req.bundle.digest().to_string(),
                )
                .map_err(|e| StoreError::Untrusted(format!("{name}: {e}")))?;
                Some((sig.signer().to_owned(), sig.to_json()))
            }
        };
        if let Some(guard) = self.write_guard.load().as_ref() {
            guard
                .check(&req.bundle, &req.message)
                .map_err(|why| StoreError::InvalidSkill(format!("{name}: {why}")))?;
        }
        let mut w = WriteReq {
            scope: req.scope,
            name,
            bundle: req.bundle,
            author: req.author.to_string(),
            message: req.message,
            expect_rev: req.expect_rev,
            seed_path,
            pending,
            candidate,
            signature,
            origin: None,
            version: meta.version,
            require_version_increase: self.version_policy() == VersionPolicy::RequireIncrease,
            scan: None,
            refused_unless_unchanged: None,
        };
        self.gate(&mut w, names)?;
        Ok(w)
    }

    /// [`Store::write_req`] for one write, with a refusal recorded as a `scan_refused` event.
    async fn write_req_one(
        &self,
        req: PutRequest,
        pending: bool,
        candidate: Option<crate::model::Candidate>,
    ) -> Result<WriteReq> {
        let actor = req.author.to_string();
        let w = self.write_req_staged(req, None, pending, candidate, None);
        self.record_refusal(w, &actor).await
    }

    /// Set what a write whose `version` is not higher than the active revision's gets in this
    /// process (`[store] versions` in skillbase.toml; [`Config::apply`] sets it).
    ///
    /// [`Config::apply`]: crate::config::Config::apply
    pub fn set_version_policy(&self, policy: VersionPolicy) {
        self.require_version_increase.store(
            policy == VersionPolicy::RequireIncrease,
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// The version policy writes follow.
    pub fn version_policy(&self) -> VersionPolicy {
        if self
            .require_version_increase
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            VersionPolicy::RequireIncrease
        } else {
            VersionPolicy::Warn
        }
    }

    /// Create or modify a skill. A bundle equal to the active one is a no-op.
    pub async fn put(&self, req: PutRequest) -> Result<WriteOutcome> {
        let w = self.write_req_one(req, false, None).await?;
        self.write_one(w).await
    }

    /// Write a revision that waits for approval (the approval policy).
    pub async fn put_pending(&self, req: PutRequest) -> Result<WriteOutcome> {
        let w = self.write_req_one(req, true, None).await?;
        self.write_one(w).await
    }

    /// Write a revision staged as a candidate beside the active one, served to `percent` of
    /// sessions and judged after `min_runs` ended runs (an agent's `stage_agent_revisions`). A
    /// skill that does not exist, or is not active, takes the write as [`Store::put`] does: a
    /// candidate needs an active revision to be compared with. A candidate staged before is
    /// superseded.
    pub async fn put_candidate(
        &self,
        req: PutRequest,
        percent: u32,
        min_runs: u32,
    ) -> Result<WriteOutcome> {
        let terms = crate::model::Candidate {
            rev: 0,
            percent: percent.clamp(1, 100),
            min_runs: min_runs.clamp(1, crate::model::MAX_CANDIDATE_MIN_RUNS),
            staged_at: 0,
        };
        let w = self.write_req_one(req, false, Some(terms)).await?;
        self.write_one(w).await
    }

    /// End a skill's staged candidate as `verdict` says: promote it (it becomes the active
    /// revision) or reject it, recording the evidence in the event, which names the agent
    /// whose run decided. `None`, with nothing changed, when the revision is no longer the
    /// staged candidate (another server settled it first, or it was superseded).
    pub async fn settle_candidate(
        &self,
        scope: &Scope,
        name: &str,
        verdict: Settlement<'_>,
    ) -> Result<Option<WriteOutcome>> {
        let actor = verdict.actor.to_string();
        let agent = verdict.agent.map(|a| a.to_string());
        let v = crate::sql::skills::Verdict {
            rev: verdict.rev,
            promote: verdict.promote,
            actor: &actor,
            agent: agent.as_deref(),
            data: &verdict.data,
        };
        let o = on_db!(self, skills::settle_candidate(scope, name, &v))?;
        if let Some(o) = &o {
            self.after_commit(std::slice::from_ref(o)).await;
        }
        Ok(o)
    }

    /// Set the trust policy writes from sources follow (`[trust]` in skillbase.toml;
    /// [`Config::apply`] sets it).
    ///
    /// [`Config::apply`]: crate::config::Config::apply
    pub fn set_trust(&self, policy: crate::trust::TrustPolicy) {
        self.trust.store(std::sync::Arc::new(policy));
    }

    /// The trust policy writes from sources follow.
    pub fn trust(&self) -> std::sync::Arc<crate::trust::TrustPolicy> {
        self.trust.load_full()
    }

    /// Accept (and pin) a signer other than the one pinned for a source, in this process
    /// (`--accept-new-signer`): off by default.
    pub fn set_accept_new_signer(&self, accept: bool) {
        self.accept_new_signer
            .store(accept, std::sync::atomic::Ordering::Relaxed);
    }

    /// The signature kept with revision `rev` of a skill (the active one when `None`), if it
    /// was written signed.
    pub async fn signature(
        &self,
        scope: &Scope,
        name: &str,
        rev: Option<i64>,
    ) -> Result<Option<skillbase_format::signature::Signature>> {
        let rev = match rev {
            Some(r) => r,
            None => match self.index().get(scope, name) {
                Some(e) => e.active_rev,
                None => return Ok(None),
            },
        };
        let text = on_db!(self, skills::signature_of(&scope.to_string(), name, rev))?;
        text.map(|t| {
            skillbase_format::signature::Signature::parse(&t).map_err(|e| {
                StoreError::Corrupt(format!("the signature of {name} revision {rev}: {e}"))
            })
        })
        .transpose()
    }

    /// Where the active revisions of a scope's skills came from (imports record it), by name.
    pub async fn origins(&self, scope: &Scope) -> Result<Vec<(String, crate::records::Origin)>> {
        on_db!(self, skills::origins(&scope.to_string()))
    }

    /// The signer pinned for a trust source, if one was.
    pub async fn pinned_signer(&self, source: &str) -> Result<Option<String>> {
        on_db!(self, skills::pinned_signer(source))
    }

    /// Check writes from `source` against the trust policy (see [`crate::trust::check`]), with
    /// the signer pinned for it read from the store.
    pub(crate) async fn check_trust(
        &self,
        source: &str,
        items: &[(&str, Option<&skillbase_format::signature::Signature>)],
    ) -> Result<Option<crate::trust::Pin>> {
        let policy = self.trust();
        let key = policy.rule(source).map_or(source, |r| r.source.as_str());
        let pinned = if items.iter().any(|(_, s)| s.is_some()) {
            self.pinned_signer(key).await?
        } else {
            None
        };
        crate::trust::check(
            &policy,
            source,
            items,
            pinned.as_deref(),
            self.accept_new_signer
                .load(std::sync::atomic::Ordering::Relaxed),
        )
    }

    /// Record a pin the trust check asked for, once its writes are in (a `signer_pinned`
    /// event says which source, which signer, and the one it replaces).
    pub(crate) async fn record_pin(&self, pin: &crate::trust::Pin, actor: &str) -> Result<()> {
        on_db!(self, skills::pin_signer(pin, actor))
    }

    /// The source a write's author names, for the trust policy: an import's or a seed's.
    fn trust_source(author: &Author) -> Option<&str> {
        match author {
            Author::Import(s) | Author::Seed(s) => Some(s),
            _ => None,
        }
    }

    pub(crate) async fn put_seed(
        &self,
        req: PutRequest,
        seed_path: String,
    ) -> Result<WriteOutcome> {
        let sig = req.signature.clone();
        let author = req.author.clone();
        let w = self.write_req(req, Some(seed_path.clone()), false, None);
        let w = self.record_refusal(w, &author.to_string()).await?;
        let pin = match Self::trust_source(&author) {
            Some(source) => {
                self.check_trust(source, &[(&w.name, sig.as_deref())])
                    .await?
            }
            None => None,
        };
        let o = self.write_one(w).await?;
        if let Some(pin) = pin {
            self.record_pin(&pin, &author.to_string()).await?;
        }
        // A seed folder has no one to answer: its warnings go to the log.
        for warning in &o.warnings {
            tracing::warn!(skill = %o.name, seed = %seed_path, "{warning}");
        }
        Ok(o)
    }

    /// Create several seeded skills in one transaction (all or nothing: the caller falls back
    /// to one by one if any fails).
    pub(crate) async fn put_seeds(
        &self,
        reqs: Vec<(PutRequest, String)>,
    ) -> Result<Vec<WriteOutcome>> {
        let mut checked = Vec::with_capacity(reqs.len());
        let neighbours = self.neighbours();
        let names = neighbours.names();
        for (r, p) in reqs {
            let sig = r.signature.clone();
            let author = r.author.clone();
            let w = self.write_req(r, Some(p), false, Some(&names));
            let w = self.record_refusal(w, &author.to_string()).await?;
            checked.push((w, sig, author));
        }
        // Each seed folder is its own source.
        let mut pins = Vec::new();
        for (w, sig, author) in &checked {
            if let Some(source) = Self::trust_source(author)
                && let Some(pin) = self
                    .check_trust(source, &[(&w.name, sig.as_deref())])
                    .await?
            {
                pins.push((pin, author.to_string()));
            }
        }
        let writes: Vec<WriteReq> = checked.into_iter().map(|(w, ..)| w).collect();
        let written = on_db!(self, skills::write_many(&writes, None, &|_| {}));
        // A refusal is recorded as its own seed's.
        let actor = match &written {
            Err(StoreError::ScanRefused(r)) => writes
                .iter()
                .find(|w| w.name == r.name && w.scope == r.scope)
                .map(|w| w.author.clone())
                .unwrap_or_default(),
            _ => String::new(),
        };
        let mut outcomes = self.record_refusal(written, &actor).await?;
        self.after_commit(&outcomes).await;
        crate::requires::warn_unmet(&self.index(), &mut outcomes);
        for o in &outcomes {
            for warning in &o.warnings {
                tracing::warn!(skill = %o.name, "{warning}");
            }
        }
        for (pin, actor) in &pins {
            self.record_pin(pin, actor).await?;
        }
        Ok(outcomes)
    }

    async fn write_one(&self, w: WriteReq) -> Result<WriteOutcome> {
        // Two writers creating the same new skill at once: the loser retries as a modification.
        let mut attempt = 0;
        let out = loop {
            attempt += 1;
            let r = on_db!(
                self,
                skills::write_many(std::slice::from_ref(&w), None, &|_| {})
            );
            match r {
                Err(e) if attempt < 3 && e.is_unique_violation() => continue,
                other => break self.record_refusal(other, &w.author).await?,
            }
        };
        let mut o = out.into_iter().next().expect("one outcome per request");
        self.after_commit(std::slice::from_ref(&o)).await;
        crate::requires::warn_unmet(&self.index(), std::slice::from_mut(&mut o));
        warn_codex(std::slice::from_ref(&w), std::slice::from_mut(&mut o));
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
        let items = bundles.into_iter().map(|b| (b, None)).collect();
        self.import_signed(scope, items, author, message, progress)
            .await
    }

    /// [`Store::import`] of skills with their signatures (each verified against its bundle and
    /// kept with its revision), checked against the trust policy for the import's source
    /// (`Author::Import`): all land or none do, and a signer first seen is pinned after.
    pub async fn import_signed(
        &self,
        scope: &Scope,
        items: Vec<(Bundle, Option<skillbase_format::signature::Signature>)>,
        author: &Author,
        message: &str,
        progress: &(dyn Fn(usize) + Sync),
    ) -> Result<ImportReport> {
        let items = items.into_iter().map(|(b, s)| (b, s, None)).collect();
        self.import_from(scope, items, author, message, progress)
            .await
    }

    /// [`Store::import_signed`], with where each skill came from ([`Origin`], kept with its
    /// revision for `skillbase lock`).
    ///
    /// [`Origin`]: crate::records::Origin
    pub async fn import_from(
        &self,
        scope: &Scope,
        items: Vec<(
            Bundle,
            Option<skillbase_format::signature::Signature>,
            Option<crate::records::Origin>,
        )>,
        author: &Author,
        message: &str,
        progress: &(dyn Fn(usize) + Sync),
    ) -> Result<ImportReport> {
        let mut reqs = Vec::with_capacity(items.len());
        let mut names = Vec::with_capacity(items.len());
        let mut seen = std::collections::HashSet::with_capacity(items.len());
        let mut sigs = Vec::with_capacity(items.len());
        // The store's names indexed once for the whole import; the import's own skills are
        // not among them (one source never imitates itself).
        let neighbours = self.neighbours();
        let known = neighbours.names();
        for (bundle, signature, origin) in items {
            sigs.push(signature.clone());
            let w = self.write_req(
                PutRequest {
                    scope: scope.clone(),
                    bundle,
                    author: author.clone(),
                    message: message.to_owned(),
                    expect_rev: None,
                    signature: signature.map(Box::new),
                },
                None,
                false,
                Some(&known),
            );
            let mut w = self.record_refusal(w, &author.to_string()).await?;
            w.origin = origin;
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
        let pin = match Self::trust_source(author) {
            Some(source) => {
                let items: Vec<(&str, Option<&skillbase_format::signature::Signature>)> = names
                    .iter()
                    .map(String::as_str)
                    .zip(sigs.iter().map(Option::as_ref))
                    .collect();
                self.check_trust(source, &items).await?
            }
            None => None,
        };
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
        let written = on_db!(
            self,
            skills::write_many(&reqs, agent_update.as_ref().map(|(a, c)| (a, c)), progress)
        );
        let mut outcomes = self.record_refusal(written, &author.to_string()).await?;
        if agent_update.is_some() {
            self.agents_committed().await;
        }
        self.after_commit(&outcomes).await;
        crate::requires::warn_unmet(&self.index(), &mut outcomes);
        warn_codex(&reqs, &mut outcomes);
        if let Some(pin) = &pin {
            self.record_pin(pin, &author.to_string()).await?;
        }
        let mut report = ImportReport::default();
        for o in &outcomes {
            match o.kind {
                WriteKind::Created => report.created.push(o.name.clone()),
                WriteKind::Unchanged => report.unchanged.push(o.name.clone()),
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
        let o = on_db!(self, skills::revert(scope, name, rev, &actor.to_string()))?;
        self.after_commit(std::slice::from_ref(&o)).await;
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
        let mut o = on_db!(self, skills::approve(scope, name, rev, &actor.to_string()))?;
        self.after_commit(std::slice::from_ref(&o)).await;
        crate::requires::warn_unmet(&self.index(), std::slice::from_mut(&mut o));
        Ok(o)
    }

    /// Reject a pending revision: it is never served and the active one stays (a skill created
    /// pending, with nothing committed, is retired). Recorded as a `revision_rejected` event.
    pub async fn reject(
        &self,
        scope: &Scope,
        name: &str,
        rev: i64,
        actor: &Author,
    ) -> Result<WriteOutcome> {
        let o = on_db!(self, skills::reject(scope, name, rev, &actor.to_string()))?;
        self.after_commit(std::slice::from_ref(&o)).await;
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
            skills::set_status(scope, name, change, &actor.to_string(), &reason, expect_rev)
        )?;
        self.after_commit(std::slice::from_ref(&o)).await;
        Ok(o)
    }

    /// Every revision of a skill, oldest first.
    pub async fn history(&self, scope: &Scope, name: &str) -> Result<Vec<RevisionInfo>> {
        let mut h = on_db!(self, skills::history(scope, name))?;
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
        let files = on_db!(self, skills::revision_files(scope, name, info.rev))?;
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
        // Stored bundles were checked on write; limits are not re-applied to history (a path
        // longer than today's limit, written through JSON before the limit covered it, still
        // reads).
        let unlimited = BundleLimits {
            max_files: usize::MAX,
            max_total_bytes: u64::MAX,
            max_depth: usize::MAX,
            max_path_bytes: usize::MAX,
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

    /// Every stored revision's files and message given to `find` as stored, never scrubbed
    /// (each file content once, however many revisions hold it): a scan for what must not be
    /// there, such as the doctor's search for current vault values. Only `find`'s answers leave
    /// the store, with where each was found; the bytes never do.
    pub async fn find_in_revisions(
        &self,
        find: &(dyn Fn(&[u8]) -> Option<String> + Send + Sync),
    ) -> Result<Vec<StoredMatch>> {
        const PAGE: i64 = 256;
        let mut out = Vec::new();
        let mut after = String::new();
        loop {
            let page = on_db!(self, skills::blob_page(&after, PAGE))?;
            let Some((last, _)) = page.last() else { break };
            after = last.clone();
            let full = page.len() as i64 == PAGE;
            for (digest, bytes) in page {
                let Some(found) = find(&bytes) else { continue };
                for (scope, name, rev, path) in on_db!(self, skills::blob_uses(&digest))? {
                    out.push(StoredMatch {
                        scope: scope.parse().map_err(StoreError::Corrupt)?,
                        name,
                        rev,
                        file: Some(path),
                        found: found.clone(),
                    });
                }
            }
            if !full {
                break;
            }
        }
        let mut after = (0, 0);
        loop {
            let page = on_db!(self, skills::message_page(after, PAGE))?;
            let Some(last) = page.last() else { break };
            after = (last.0, last.1);
            let full = page.len() as i64 == PAGE;
            for (_, rev, scope, name, message) in page {
                if let Some(found) = find(message.as_bytes()) {
                    out.push(StoredMatch {
                        scope: scope.parse().map_err(StoreError::Corrupt)?,
                        name,
                        rev,
                        file: None,
                        found,
                    });
                }
            }
            if !full {
                break;
            }
        }
        out.sort_by(|a, b| {
            (a.scope.to_string(), &a.name, a.rev, &a.file).cmp(&(
                b.scope.to_string(),
                &b.name,
                b.rev,
                &b.file,
            ))
        });
        Ok(out)
    }
}

/// Where [`Store::find_in_revisions`] found something.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMatch {
    /// The skill record's scope.
    pub scope: Scope,
    /// The skill's name.
    pub name: String,
    /// The revision.
    pub rev: i64,
    /// The file of the revision, or `None` for its message.
    pub file: Option<String>,
    /// What the finder answered.
    pub found: String,
}

/// Add to each written outcome what its Codex `agents/openai.yaml` says that does not map onto
/// Skillbase's keys (the file's errors refused the write before).
fn warn_codex(reqs: &[WriteReq], outcomes: &mut [WriteOutcome]) {
    for o in outcomes
        .iter_mut()
        .filter(|o| matches!(o.kind, WriteKind::Created | WriteKind::Modified))
    {
        let Some(f) = reqs
            .iter()
            .find(|r| r.name == o.name && r.scope == o.scope)
            .and_then(|r| r.bundle.get(skillbase_format::openai_yaml::PATH))
        else {
            continue;
        };
        let opts = ValidateOptions::default();
        o.warnings.extend(
            skillbase_format::validate::codex_diagnostics(&f.bytes, &opts)
                .into_iter()
                .filter(|d| d.severity == skillbase_format::Severity::Warning)
                .map(|d| d.message),
        );
    }
}
