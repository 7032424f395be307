//! Scans: the gate every arriving revision passes (`crate::scan`), the findings kept with
//! revisions, and rescans when the rules change.

use super::Store;
use crate::error::{Refusal, Result, StoreError};
use crate::model::{AgentName, Scope};
use crate::records::{NewEvent, WriteReq};
use crate::scan::{Action, Neighbours, ScanPolicy, ScanRecord, ScanRow};
use skillbase_format::Bundle;
use skillbase_scan::{ScanContext, Scanner, Severity, SkillNames};
use std::sync::Arc;

/// What a rescan found: how many revisions it scanned, and those whose verdict changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RescanReport {
    /// The digest of the rules it scanned with.
    pub rules: String,
    /// How many active revisions it scanned.
    pub scanned: usize,
    /// The revisions whose verdict is not the one stored (or that had none stored).
    pub changed: Vec<VerdictChange>,
}

/// A revision whose verdict a rescan changed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct VerdictChange {
    /// The skill's scope.
    pub scope: Scope,
    /// The skill's name.
    pub name: String,
    /// The revision.
    pub rev: i64,
    /// The verdict stored before (`None`: nothing found).
    pub before: Option<Severity>,
    /// Whether it had been scanned at all before.
    pub scanned_before: bool,
    /// The verdict now.
    pub after: Option<Severity>,
}

impl Store {
    /// Set what the scan's findings get on arrival (`[scan]` in skillbase.toml;
    /// [`Config::apply`] sets it).
    ///
    /// [`Config::apply`]: crate::config::Config::apply
    pub fn set_scan_policy(&self, policy: ScanPolicy) {
        self.scan_policy.store(Arc::new(policy));
    }

    /// The scan policy writes follow.
    pub fn scan_policy(&self) -> Arc<ScanPolicy> {
        self.scan_policy.load_full()
    }

    /// The scanner (the built-in rules, compiled once per store, unless set).
    pub fn scanner(&self) -> Result<Arc<Scanner>> {
        if let Some(s) = self.scanner.load_full() {
            return Ok(s);
        }
        let s = Arc::new(
            Scanner::new()
                .map_err(|e| StoreError::Corrupt(format!("the built-in scan rules: {e}")))?,
        );
        self.scanner.store(Some(s.clone()));
        Ok(s)
    }

    /// Scan with other rules from now on (`Scanner::with_rules`): a new build's rules, as
    /// `rescan` sees them.
    pub fn set_scanner(&self, scanner: Scanner) {
        self.scanner.store(Some(Arc::new(scanner)));
    }

    /// The index's skills with their origins, for the name-imitation rule (a batch's).
    pub(crate) fn neighbours(&self) -> Neighbours {
        Neighbours::all(&self.index())
    }

    /// Scan a bundle as the gate does (`origin`: who brings it; names of the same origin never
    /// imitate each other).
    fn scan(
        &self,
        bundle: &Bundle,
        names: &SkillNames<'_>,
        origin: &str,
    ) -> Result<skillbase_scan::Report> {
        let files: Vec<(&str, &[u8])> = bundle
            .files()
            .iter()
            .map(|f| (f.path.as_str(), &f.bytes[..]))
            .collect();
        let context = ScanContext {
            other_skills: Some(names),
            origin: Some(origin),
        };
        Ok(self.scanner()?.scan_bundle(&files, &context))
    }

    /// What the gate finds in `bundle` written by `author` (the name-imitation rule against
    /// the skills of the index near its name), without writing: the gate's own cost.
    pub fn scan_as_gate(
        &self,
        bundle: &Bundle,
        author: &crate::model::Author,
    ) -> Result<skillbase_scan::Report> {
        let (name, _) = Self::check_bundle(bundle)?;
        let near = Neighbours::near(&self.index(), &name);
        self.scan(
            bundle,
            &near.names(),
            &crate::scan::origin_of(&author.to_string()),
        )
    }

    /// The gate: scan the write's bundle and apply the policy for its scope. `review` writes
    /// it pending (a candidate is not staged), `refuse` is an error naming the decisive
    /// finding; the scan is kept with the revision either way.
    pub(crate) fn gate(&self, w: &mut WriteReq, names: Option<&SkillNames<'_>>) -> Result<()> {
        let origin = crate::scan::origin_of(&w.author);
        // A name is judged when it is new: a revision of an existing skill keeps its name.
        let index = self.index();
        let existing = index.get(&w.scope, &w.name);
        let unchanged = existing.is_some_and(|e| e.digest == w.bundle.digest());
        let report = if existing.is_some() {
            self.scan(&w.bundle, &SkillNames::default(), &origin)?
        } else if let Some(names) = names {
            self.scan(&w.bundle, names, &origin)?
        } else {
            let near = Neighbours::near(&index, &w.name);
            self.scan(&w.bundle, &near.names(), &origin)?
        };
        let trusted = w
            .signature
            .as_ref()
            .is_some_and(|(signer, _)| self.trust().lists_signer(signer));
        let policy = self.scan_policy();
        let d = policy.decide(&w.scope, &report, trusted);
        match (d.action, d.decisive) {
            (Action::Refuse, Some(f)) => {
                let refusal = Box::new(Refusal {
                    scope: w.scope.clone(),
                    name: w.name.clone(),
                    finding: f.clone(),
                    findings: report.findings.len(),
                    event: crate::scan::event(&report, &d, f),
                });
                // The active revision's files again (a re-import of an unchanged skill): the
                // write records nothing, so it is not refused for what is already served;
                // the transaction refuses it if the skill changed meanwhile.
                if unchanged {
                    w.refused_unless_unchanged = Some(refusal);
                    return Ok(());
                }
                return Err(StoreError::ScanRefused(refusal));
            }
            (Action::Review, _) => {
                w.pending = true;
                w.candidate = None;
            }
            _ => {}
        }
        w.scan = Some(ScanRow::new(&report, &d));
        Ok(())
    }

    /// Record a `scan_refused` event for a write the gate refused (the write itself wrote
    /// nothing), and answer the result unchanged.
    pub(crate) async fn record_refusal<T>(&self, r: Result<T>, actor: &str) -> Result<T> {
        if let Err(StoreError::ScanRefused(refusal)) = &r {
            let ev = NewEvent {
                kind: crate::EventKind::ScanRefused,
                scope: Some(refusal.scope.to_string()),
                skill: Some(refusal.name.clone()),
                actor: Some(actor.to_owned()),
                data: serde_json::to_value(&refusal.event).unwrap_or_default(),
                ..NewEvent::default()
            };
            if let Err(e) = self.append_event(&ev).await {
                tracing::warn!(error = %e, skill = %refusal.name, "the scan_refused event was not recorded");
            }
        }
        r
    }

    /// Every scan of a skill's revisions, oldest first (a revision scanned again by a rescan
    /// has several).
    pub async fn scans(&self, scope: &Scope, name: &str) -> Result<Vec<ScanRecord>> {
        let rows = on_db!(self, scans::scans_of(&scope.to_string(), name))?;
        rows.into_iter().map(crate::sql::scans::record).collect()
    }

    /// The latest scan of revision `rev` of a skill (the active one when `None`); `None` when
    /// it was never scanned (written before the gate, or by a build without it).
    pub async fn latest_scan(
        &self,
        scope: &Scope,
        name: &str,
        rev: Option<i64>,
    ) -> Result<Option<ScanRecord>> {
        let rev = match rev {
            Some(r) => r,
            None => match self.index().get(scope, name) {
                Some(e) => e.active_rev,
                None => {
                    return Err(StoreError::NotFound {
                        scope: scope.clone(),
                        name: name.to_owned(),
                    });
                }
            },
        };
        Ok(self
            .scans(scope, name)
            .await?
            .into_iter()
            .rev()
            .find(|s| s.rev == rev))
    }

    /// The latest scan of every skill's active revision, by (scope, name); skills never
    /// scanned are absent.
    pub async fn active_scans(&self) -> Result<Vec<(Scope, String, ScanRecord)>> {
        let rows = on_db!(self, scans::active_scans())?;
        rows.into_iter()
            .map(|(scope, name, row)| {
                Ok((
                    scope.parse().map_err(StoreError::Corrupt)?,
                    name,
                    crate::sql::scans::record(row)?,
                ))
            })
            .collect()
    }

    /// Scan every skill's active revision again with the current rules (of `agent`'s scope
    /// and the shared scope, when given), keep each scan that differs from the one stored, and
    /// report the revisions whose verdict changed. Nothing else changes: a revision already
    /// served stays served.
    pub async fn rescan(&self, agent: Option<&AgentName>) -> Result<RescanReport> {
        self.rescan_where(agent, false).await
    }

    /// Scan the active revisions no scan was ever kept for (skills written before the gate
    /// existed, after an upgrade), in every scope; the rest are left alone. `skillbase serve`
    /// runs it at start, so the doctor's "never scanned" (D015) does not wait for a person to
    /// run `skillbase scan --store`.
    pub async fn scan_unscanned(&self) -> Result<RescanReport> {
        self.rescan_where(None, true).await
    }

    async fn rescan_where(
        &self,
        agent: Option<&AgentName>,
        only_unscanned: bool,
    ) -> Result<RescanReport> {
        let stored: std::collections::HashMap<(String, String), ScanRecord> = self
            .active_scans()
            .await?
            .into_iter()
            .map(|(s, n, r)| ((s.to_string(), n), r))
            .collect();
        let index = self.index();
        let mut report = RescanReport {
            rules: self.scanner()?.digest().to_owned(),
            ..RescanReport::default()
        };
        for e in index.all() {
            let in_view = match (&e.scope, agent) {
                (_, None) | (Scope::Shared, Some(_)) => true,
                (Scope::Agent(a), Some(b)) => a == b,
            };
            let scanned = stored.contains_key(&(e.scope.to_string(), e.name.clone()));
            if !in_view || (only_unscanned && scanned) {
                continue;
            }
            let (info, bundle) = self.bundle(&e.scope, &e.name, Some(e.active_rev)).await?;
            // As on arrival: a name is judged against the skills that were there before it.
            let older = Neighbours::near_older(&index, e);
            let origin = crate::scan::origin_of(&info.author);
            let scan = self.scan(&bundle, &older.names(), &origin)?;
            report.scanned += 1;
            let before = stored.get(&(e.scope.to_string(), e.name.clone()));
            // Kept when it says something new (other rules or other findings), so repeated
            // rescans do not grow the table.
            let same = before.is_some_and(|b| b.rules == scan.rules && b.findings == scan.findings);
            if !same {
                let row = ScanRow::rescan(&scan);
                on_db!(
                    self,
                    scans::append_scan(&e.scope.to_string(), &e.name, e.active_rev, &row)
                )?;
            }
            if before.is_none_or(|b| b.verdict != scan.verdict) {
                report.changed.push(VerdictChange {
                    scope: e.scope.clone(),
                    name: e.name.clone(),
                    rev: e.active_rev,
                    before: before.and_then(|b| b.verdict),
                    scanned_before: before.is_some(),
                    after: scan.verdict,
                });
            }
        }
        Ok(report)
    }
}
