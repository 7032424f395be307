//! Runs: the skill revision driving a session, its calls and its outcome.

use super::Store;
use crate::error::Result;
use crate::index::SkillEntry;
use crate::model::{AgentName, Scope};
use crate::records::RunRecord;

impl Store {
    /// Open a run of a skill revision in a session (ending the session's previous open run as
    /// superseded: another skill took over).
    pub async fn start_run(
        &self,
        session: &str,
        agent: &AgentName,
        entry: &SkillEntry,
    ) -> Result<i64> {
        let scope = entry.scope.to_string();
        let run = crate::records::RunStart {
            agent: agent.as_str(),
            skill_id: entry.id,
            scope: &scope,
            skill: &entry.name,
            rev: entry.active_rev,
        };
        on_db!(self, runs::start_run(session, &run))
    }

    /// The session's open run: the skill driving it, if any.
    pub async fn open_run(&self, agent: &AgentName, session: &str) -> Result<Option<RunRecord>> {
        on_db!(self, runs::open_run(agent.as_str(), session))
    }

    /// Count a call made under a run.
    pub async fn count_call(&self, run: i64, failed: bool) -> Result<()> {
        on_db!(self, runs::count_call(run, failed))
    }

    /// End a run with its outcome; returns the run and how many runs of that revision in a row
    /// have failed.
    pub async fn end_run(&self, run: i64, outcome: &str, note: &str) -> Result<(RunRecord, i64)> {
        on_db!(self, runs::end_run(run, outcome, note))
    }

    /// Recent runs of a skill, newest first.
    pub async fn runs(&self, scope: &Scope, name: &str, limit: i64) -> Result<Vec<RunRecord>> {
        on_db!(self, runs::runs(&scope.to_string(), name, limit))
    }

    /// Ended runs of revision `rev` of skill record `skill_id` started at or after `since`
    /// (Unix milliseconds): (successes, failures). What a staged candidate is judged by.
    pub async fn outcomes_since(&self, skill_id: i64, rev: i64, since: i64) -> Result<(i64, i64)> {
        on_db!(self, runs::outcomes_since(skill_id, rev, since))
    }
}
