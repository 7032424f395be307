//! The one write path of skills. Every revision a person or an agent writes — a put or an
//! import from the CLI, REST or the studio, and an agent's authoring tools — goes through a
//! [`SkillWriter`]: the store validates and records it (its events, its trust and version
//! checks, its required skills' warnings), then the writer adds what the written revision
//! `requires:` that this installation provides to no agent (a tool class no tool provides, a
//! server not configured, a program not on `PATH`). The edges only parse and print.

use crate::environment::Environment;
use skillbase_format::Bundle;
use skillbase_format::signature::Signature;
use skillbase_route::requires::environment_unmet;
use skillbase_store::records::Origin;
use skillbase_store::{
    Author, ImportReport, PutRequest, Scope, StatusChange, Store, StoreError, WriteKind,
    WriteOutcome,
};
use std::sync::Arc;

/// How a revision is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Made active (the default).
    Active,
    /// Held for a person's review.
    Pending,
    /// Staged beside the active revision, served to `percent` of sessions until `min_runs`
    /// runs judge it.
    Candidate {
        /// The share of sessions served the candidate.
        percent: u32,
        /// The runs that decide it.
        min_runs: u32,
    },
}

/// Writes skills into a store and answers, with each outcome, the warnings of what the
/// revision requires that `environment` lacks. [`crate::Engine::writer`] gives the engine's
/// (checked against the tools and servers it has); a program without an engine makes one
/// over what its configuration declares ([`crate::RuntimeConfig::environment`]).
#[derive(Clone)]
pub struct SkillWriter {
    store: Arc<Store>,
    environment: Arc<Environment>,
    telemetry: Option<crate::telemetry::Telemetry>,
}

impl SkillWriter {
    /// A writer into `store`, checking `requires:` against `environment`.
    pub fn new(store: Arc<Store>, environment: Arc<Environment>) -> SkillWriter {
        SkillWriter {
            store,
            environment,
            telemetry: None,
        }
    }

    /// This writer, recording a span per write when export is on.
    pub(crate) fn with_telemetry(mut self, telemetry: Option<crate::telemetry::Telemetry>) -> Self {
        self.telemetry = telemetry;
        self
    }

    /// Record a write's span: what was written, or the error's kind.
    fn record<T>(
        &self,
        operation: &str,
        started: crate::telemetry::Started,
        result: &Result<T, StoreError>,
        written: impl Fn(&T) -> &[WriteOutcome],
    ) {
        if let Some(t) = &self.telemetry {
            match result {
                Ok(v) => t.write(operation, written(v), None, started),
                Err(e) => t.write(operation, &[], Some(error_kind(e)), started),
            }
        }
    }

    /// Write one revision, made active.
    pub async fn put(&self, req: PutRequest) -> Result<WriteOutcome, StoreError> {
        self.put_as(req, WriteMode::Active).await
    }

    /// Write one revision as `mode` says.
    pub async fn put_as(
        &self,
        req: PutRequest,
        mode: WriteMode,
    ) -> Result<WriteOutcome, StoreError> {
        let started = crate::telemetry::Started::now();
        let (operation, result) = match mode {
            WriteMode::Active => ("put", self.store.put(req).await),
            WriteMode::Pending => ("pending", self.store.put_pending(req).await),
            WriteMode::Candidate { percent, min_runs } => (
                "candidate",
                self.store.put_candidate(req, percent, min_runs).await,
            ),
        };
        self.record(operation, started, &result, std::slice::from_ref);
        let mut o = result?;
        self.warn(std::slice::from_mut(&mut o));
        Ok(o)
    }

    /// Import many skills into one scope in one transaction (all land or none do), each with
    /// its signature and where it came from when known (see [`Store::import_from`]).
    pub async fn import(
        &self,
        scope: &Scope,
        items: Vec<(Bundle, Option<Signature>, Option<Origin>)>,
        author: &Author,
        message: &str,
        progress: &(dyn Fn(usize) + Sync),
    ) -> Result<ImportReport, StoreError> {
        let started = crate::telemetry::Started::now();
        let result = self
            .store
            .import_from(scope, items, author, message, progress)
            .await;
        self.record("import", started, &result, |r: &ImportReport| &r.outcomes);
        let mut report = result?;
        self.warn(&mut report.outcomes);
        Ok(report)
    }

    /// Make revision `rev` of `name` active again, as a new revision with its content.
    pub async fn revert(
        &self,
        scope: &Scope,
        name: &str,
        rev: i64,
        actor: &Author,
    ) -> Result<WriteOutcome, StoreError> {
        let started = crate::telemetry::Started::now();
        let result = self.store.revert(scope, name, rev, actor).await;
        self.one("revert", started, result)
    }

    /// Approve the pending revision `rev` of `name` (it becomes active).
    pub async fn approve(
        &self,
        scope: &Scope,
        name: &str,
        rev: i64,
        actor: &Author,
    ) -> Result<WriteOutcome, StoreError> {
        let started = crate::telemetry::Started::now();
        let result = self.store.approve(scope, name, rev, actor).await;
        self.one("approve", started, result)
    }

    /// Reject the pending revision `rev` of `name`.
    pub async fn reject(
        &self,
        scope: &Scope,
        name: &str,
        rev: i64,
        actor: &Author,
    ) -> Result<WriteOutcome, StoreError> {
        let started = crate::telemetry::Started::now();
        let result = self.store.reject(scope, name, rev, actor).await;
        self.one("reject", started, result)
    }

    /// Retire, restore, disable or enable `name`, with `reason` kept in its event; with
    /// `expect_rev`, refused as a conflict (nothing changed) unless that is still the latest
    /// revision (see [`Store::set_status_if`]).
    pub async fn set_status(
        &self,
        scope: &Scope,
        name: &str,
        change: StatusChange,
        actor: &Author,
        reason: serde_json::Value,
        expect_rev: Option<i64>,
    ) -> Result<WriteOutcome, StoreError> {
        let started = crate::telemetry::Started::now();
        let result = self
            .store
            .set_status_if(scope, name, change, actor, reason, expect_rev)
            .await;
        self.one(change.as_str(), started, result)
    }

    /// A one-revision change's span, then its warnings when it made a revision active.
    fn one(
        &self,
        operation: &str,
        started: crate::telemetry::Started,
        result: Result<WriteOutcome, StoreError>,
    ) -> Result<WriteOutcome, StoreError> {
        self.record(operation, started, &result, std::slice::from_ref);
        let mut o = result?;
        self.warn(std::slice::from_mut(&mut o));
        Ok(o)
    }

    /// Add to each outcome whose revision is now active what its `requires:` lack here.
    fn warn(&self, outcomes: &mut [WriteOutcome]) {
        let index = self.store.index();
        for o in outcomes.iter_mut() {
            if !matches!(o.kind, WriteKind::Created | WriteKind::Modified) {
                continue;
            }
            let Some(e) = index.get(&o.scope, &o.name) else {
                continue;
            };
            if e.active_rev == o.rev && !e.meta.requires.is_empty() {
                o.warnings
                    .extend(environment_unmet(&e.meta, &self.environment));
            }
        }
    }
}

/// A write's failure as the span's `error.type`: its kind, never its text (which may quote
/// the skill).
fn error_kind(e: &StoreError) -> &'static str {
    match e {
        StoreError::NotFound { .. } | StoreError::NoSuchRevision { .. } => "not_found",
        StoreError::Conflict { .. } => "conflict",
        StoreError::VersionNotIncreased { .. } => "version_not_increased",
        StoreError::Retired { .. } => "retired",
        StoreError::InvalidSkill(_) | StoreError::Bundle(_) | StoreError::Invalid(_) => "invalid",
        StoreError::Untrusted(_) => "untrusted",
        StoreError::LimitReached(_) => "limit_reached",
        e if e.is_storage_fault() => "storage_fault",
        _ => "store_error",
    }
}
