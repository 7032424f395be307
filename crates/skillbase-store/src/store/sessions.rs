//! Sessions: opening one for its agent, its activations and its note block.

use super::Store;
use crate::error::{Result, StoreError};
use crate::index::SkillEntry;
use crate::model::AgentName;
use crate::records::{ActivationRecord, NewEvent, SessionRecord};

impl Store {
    /// Create a session for `agent` if it does not exist; refuses a session owned by another
    /// agent.
    pub async fn open_session(&self, id: &str, agent: &AgentName) -> Result<()> {
        crate::model::check_session_id(id).map_err(StoreError::Invalid)?;
        if !crate::error::session_id_usable(id, agent.as_str()) {
            return Err(StoreError::SessionUnavailable);
        }
        let owner = on_db!(self, sessions::open_session(id, agent.as_str()))?;
        if owner != agent.as_str() {
            return Err(StoreError::SessionUnavailable);
        }
        Ok(())
    }

    /// A stored session with its activations.
    pub async fn session(&self, id: &str) -> Result<Option<SessionRecord>> {
        on_db!(self, sessions::session(id))
    }

    /// Record that a skill was activated in a session.
    pub async fn record_activation(&self, session: &str, a: &ActivationRecord) -> Result<()> {
        on_db!(self, sessions::record_activation(session, a))
    }

    /// Record the activations of one load and their events in one transaction.
    pub async fn record_activations(
        &self,
        session: &str,
        acts: &[ActivationRecord],
        events: &[NewEvent],
    ) -> Result<()> {
        on_db!(self, sessions::record_activations(session, acts, events))
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
            .map(|((agent, e), scope)| crate::records::RunStart {
                agent: agent.as_str(),
                skill_id: e.id,
                scope,
                skill: &e.name,
                rev: e.active_rev,
            });
        on_db!(
            self,
            sessions::record_activations_and_run(session, acts, events, start.as_ref())
        )
    }

    /// A session's note block.
    pub async fn note(&self, session: &str) -> Result<String> {
        on_db!(self, sessions::note(session))
    }

    /// Replace a session's note block.
    pub async fn set_note(&self, session: &str, text: &str) -> Result<()> {
        on_db!(self, sessions::set_note(session, text))
    }
}
