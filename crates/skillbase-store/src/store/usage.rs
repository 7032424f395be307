//! Skill usage: what the aggregates kept with the events say about a skill, or the library.

use super::Store;
use crate::SkillEntry;
use crate::error::Result;
use crate::model::{AgentName, Status};
use crate::usage::{LibraryUsage, NeverUsed, SkillUsage, day_string, totals};
use std::sync::Arc;

impl Store {
    /// `name`'s usage from day `since` (days since 1970-01-01, UTC), by `agent` or every agent:
    /// activations by reason, per agent, revision and day; catalog listings; runs, outcomes,
    /// unfollowed runs and drift per revision; tokens of its body. Read from the aggregates
    /// (migration 20), so trimmed events still count.
    pub async fn skill_usage(
        &self,
        name: &str,
        agent: Option<&str>,
        since: i64,
    ) -> Result<SkillUsage> {
        let (rows, turns) = on_db!(self, usage::skill_rows(name, agent, since))?;
        Ok(SkillUsage::from_rows(name, since, &rows, &turns))
    }

    /// The active skills (of `agent`'s view, or all) no agent (or `agent`) activated from day
    /// `since` on, by name and scope, with the last day they were used before it.
    pub async fn never_used_skills(
        &self,
        since: i64,
        agent: Option<&str>,
    ) -> Result<Vec<NeverUsed>> {
        let last: std::collections::HashMap<String, i64> =
            on_db!(self, usage::last_used(agent))?.into_iter().collect();
        let index = self.index();
        let skills: Vec<Arc<SkillEntry>> = match agent.map(AgentName::parse) {
            // An agent's skills: what its view holds (its own scope over the shared one, its
            // allowlist); an agent this store does not hold has none.
            Some(Ok(a)) => match self.agent_cached(&a) {
                Some(agent) => skillbase_route::view::visible(&agent, &index),
                None => Vec::new(),
            },
            Some(Err(_)) => Vec::new(),
            None => index.all().cloned().collect(),
        };
        let mut out: Vec<NeverUsed> = skills
            .iter()
            .filter(|e| e.status == Status::Active)
            .filter(|e| last.get(e.name.as_str()).is_none_or(|d| *d < since))
            .map(|e| NeverUsed {
                scope: e.scope.to_string(),
                name: e.name.to_string(),
                last_used: last.get(e.name.as_str()).map(|d| day_string(*d)),
            })
            .collect();
        out.sort_by(|a, b| (&a.name, &a.scope).cmp(&(&b.name, &b.scope)));
        Ok(out)
    }

    /// The library's usage from day `since`, by `agent` or every agent: each skill's totals and
    /// the never-used skills.
    pub async fn library_usage(&self, agent: Option<&str>, since: i64) -> Result<LibraryUsage> {
        let rows = on_db!(self, usage::library_rows(agent, since))?;
        Ok(LibraryUsage {
            since: day_string(since),
            agent: agent.map(str::to_owned),
            skills: totals(&rows),
            never_used: self.never_used_skills(since, agent).await?,
        })
    }
}
