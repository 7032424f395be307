//! Sessions: opening one for its agent, its activations and its note block.

use super::Store;
use crate::error::{Result, StoreError};
use crate::index::SkillEntry;
use crate::model::AgentName;
use crate::records::{ActivationRecord, NewEvent, SessionRecord};

impl Store {
    /// Create the session `id` of `agent` if it does not exist. Sessions are keyed by
    /// `(agent, id)`: the same id names unrelated sessions of two agents, and whether another
    /// agent holds an id changes nothing here. Refuses an id in another agent's derived
    /// namespace ([`crate::session_id::usable_by`]).
    pub async fn open_session(&self, id: &str, agent: &AgentName) -> Result<()> {
        crate::model::check_session_id(id).map_err(StoreError::Invalid)?;
        if !crate::session_id::usable_by(id, agent.as_str()) {
            return Err(StoreError::SessionUnavailable);
        }
        on_db!(self, sessions::open_session(agent.as_str(), id))
    }

    /// The session `id` of `agent`, with its activations.
    pub async fn session(&self, agent: &AgentName, id: &str) -> Result<Option<SessionRecord>> {
        on_db!(self, sessions::session(agent.as_str(), id))
    }

    /// The agents holding a session named `id` (at most 100, by name): how an admin, who acts
    /// for no one agent, finds the session an id names.
    pub async fn session_agents(&self, id: &str) -> Result<Vec<AgentName>> {
        let names = on_db!(self, sessions::session_agents(id))?;
        Ok(names
            .into_iter()
            .filter_map(|n| AgentName::parse(&n).ok())
            .collect())
    }

    /// Record that a skill was activated in a session of `agent`.
    pub async fn record_activation(
        &self,
        agent: &AgentName,
        session: &str,
        a: &ActivationRecord,
    ) -> Result<()> {
        on_db!(
            self,
            sessions::record_activation(agent.as_str(), session, a)
        )
    }

    /// Record the activations of one load and their events in one transaction.
    pub async fn record_activations(
        &self,
        agent: &AgentName,
        session: &str,
        acts: &[ActivationRecord],
        events: &[NewEvent],
    ) -> Result<()> {
        on_db!(
            self,
            sessions::record_activations(agent.as_str(), session, acts, events)
        )
    }

    /// [`Store::record_activations`], and open a run of `run` (the skill that now drives the
    /// session, ending its open run) in the same transaction; returns the run's id.
    pub async fn record_activations_and_run(
        &self,
        agent: &AgentName,
        session: &str,
        acts: &[ActivationRecord],
        events: &[NewEvent],
        run: Option<(&AgentName, &SkillEntry)>,
    ) -> Result<Option<i64>> {
        let scope = run.map(|(_, e)| e.scope.to_string());
        let start = run
            .zip(scope.as_deref())
            .map(|((agent, e), scope)| crate::records::RunStart {
                agent: agent.as_str(),
                skill_id: e.id,
                scope,
                skill: &e.name,
                rev: e.active_rev,
            });
        on_db!(
            self,
            sessions::record_activations_and_run(
                agent.as_str(),
                session,
                acts,
                events,
                start.as_ref()
            )
        )
    }

    /// A session's note block.
    pub async fn note(&self, agent: &AgentName, session: &str) -> Result<String> {
        on_db!(self, sessions::note(agent.as_str(), session))
    }

    /// Replace a session's note block.
    pub async fn set_note(&self, agent: &AgentName, session: &str, text: &str) -> Result<()> {
        on_db!(self, sessions::set_note(agent.as_str(), session, text))
    }
}
