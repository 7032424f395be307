//! Events: appending them (one, or the dispatcher's batches) and reading them, scrubbed.

use super::Store;
use super::guard::scrub_json;
use crate::error::Result;
use crate::records::{EventFilter, EventRecord, NewEvent};

impl Store {
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
        on_db!(self, events::append_events_and_count(evs, counts))
    }

    /// Append an event.
    pub async fn append_event(&self, ev: &NewEvent) -> Result<()> {
        on_db!(self, events::append_event(ev))
    }

    /// Apply a retention policy now (or as if at `now`, Unix ms, for tests): remove the calls,
    /// turns and activations and the ended sessions it names, and record what was removed as an
    /// `events_trimmed` event, all in one transaction. Nothing else is ever removed; the
    /// database's trigger refuses any other deletion of events.
    pub async fn apply_retention(
        &self,
        policy: &crate::retention::RetentionPolicy,
        now: Option<i64>,
    ) -> Result<crate::retention::RetentionReport> {
        on_db!(self, retention::apply_retention(policy, now))
    }

    /// The newest `limit` events of one agent and kind, newest first, scrubbed as
    /// [`Store::events`] (the doctor reads an agent's recent turns with it).
    pub async fn recent_events(
        &self,
        agent: &str,
        kind: &str,
        limit: i64,
    ) -> Result<Vec<EventRecord>> {
        self.recent_events_before(agent, kind, None, limit).await
    }

    /// [`Store::recent_events`] older than the event `before_id` (`None`: from the newest): the
    /// next page when reading an agent's events backwards (dreaming reads its newest first).
    pub async fn recent_events_before(
        &self,
        agent: &str,
        kind: &str,
        before_id: Option<i64>,
        limit: i64,
    ) -> Result<Vec<EventRecord>> {
        let before = before_id.unwrap_or(i64::MAX);
        let mut evs = on_db!(self, events::recent_events(agent, kind, before, limit))?;
        if let Some(g) = self.guard() {
            for e in &mut evs {
                scrub_json(&*g, &mut e.data);
            }
        }
        Ok(evs)
    }

    /// Read events.
    pub async fn events(&self, filter: &EventFilter) -> Result<Vec<EventRecord>> {
        let mut evs = on_db!(self, events::events(filter))?;
        if let Some(g) = self.guard() {
            for e in &mut evs {
                scrub_json(&*g, &mut e.data);
            }
        }
        Ok(evs)
    }
}
