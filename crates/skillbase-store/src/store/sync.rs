//! Following writes made elsewhere: other servers' over one PostgreSQL (`sync_changes`), and
//! seed folders that diverged from the store.

use super::Store;
use crate::error::Result;
use crate::events::EventKind;
use crate::model::Scope;

impl Store {
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
        let (events, newest) = on_db!(self, sync::index_changes(floor, LIMIT as i64))?;
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
        if events
            .iter()
            .any(|(_, kind, _, _)| *kind == EventKind::AgentChanged)
        {
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

    pub(crate) async fn mark_diverged(
        &self,
        scope: &Scope,
        name: &str,
        seed_path: &str,
        digest: &str,
    ) -> Result<bool> {
        on_db!(self, sync::mark_diverged(scope, name, seed_path, digest))
    }
}

/// How far back `sync_changes` looks for events committed after newer ones were seen.
pub const SYNC_LOOKBACK: std::time::Duration = std::time::Duration::from_secs(60);

/// The ids `sync_changes` has looked at: marks of the newest id by time, and the index-changing
/// events applied within the look-back window (few: writes, not calls).
#[derive(Default)]
pub(super) struct SyncWindow {
    /// The newest id as of at least `SYNC_LOOKBACK` ago: everything at or below it is settled.
    settled: i64,
    /// (when, newest id then), oldest first.
    marks: std::collections::VecDeque<(std::time::Instant, i64)>,
    /// Index-changing events above `settled` already applied.
    applied: std::collections::BTreeSet<i64>,
}

impl SyncWindow {
    pub(super) fn from(seen: i64) -> SyncWindow {
        SyncWindow {
            settled: seen,
            ..SyncWindow::default()
        }
    }

    /// The id to read from: marks older than the window settle.
    pub(super) fn floor(&mut self, now: std::time::Instant) -> i64 {
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

    pub(super) fn mark(&mut self, now: std::time::Instant, newest: i64) {
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

/// The channel PostgreSQL announces committed writes on (migration `0010_change_notify`).
const CHANGE_CHANNEL: &str = "skillbase_changes";

/// What an announcement from another process says to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Skills, agents or the vault changed: apply [`Store::sync_changes`] (and re-read the vault).
    Index,
    /// A token was created or revoked: forget cached token lookups.
    Tokens,
    /// The listener's connection was lost and made again: announcements may have been missed,
    /// so apply everything.
    Reconnected,
}

/// Announcements of other processes' committed writes to this store (PostgreSQL's
/// `LISTEN`/`NOTIFY`), delivered when the writing transaction commits. Only stores on
/// PostgreSQL have one ([`Store::change_listener`]); SQLite's processes poll. It holds one
/// connection of the store's pool until dropped, and [`Store::close`] waits for that
/// connection: drop the listener first.
pub struct ChangeListener {
    inner: sqlx::postgres::PgListener,
    /// `<schema>:`: the prefix of this store's announcements.
    prefix: String,
}

impl ChangeListener {
    /// The next announcement for this store. Waits; a lost connection is made again and
    /// answered as [`Change::Reconnected`]; an error means the database cannot be reached (call
    /// again later).
    pub async fn recv(&mut self) -> Result<Change> {
        loop {
            match self.inner.try_recv().await? {
                None => return Ok(Change::Reconnected),
                Some(n) => {
                    if let Some(c) = self.read(n.payload()) {
                        return Ok(c);
                    }
                }
            }
        }
    }

    /// Announcements already received, without waiting (to apply a burst once).
    pub fn buffered(&mut self) -> Vec<Change> {
        let mut out = Vec::new();
        while let Some(n) = self.inner.next_buffered() {
            if let Some(c) = self.read(n.payload()) {
                out.push(c);
            }
        }
        out
    }

    fn read(&self, payload: &str) -> Option<Change> {
        match payload.strip_prefix(self.prefix.as_str())? {
            "index" => Some(Change::Index),
            "tokens" => Some(Change::Tokens),
            // A newer build's announcement: applying everything is always right.
            _ => Some(Change::Reconnected),
        }
    }
}

impl Store {
    /// A listener for writes other processes commit to this store: `Some` on PostgreSQL
    /// (`LISTEN`, on a connection of its own taken from the pool), `None` on SQLite.
    pub async fn change_listener(&self) -> Result<Option<ChangeListener>> {
        let crate::db::Db::Postgres(pool) = &self.db else {
            return Ok(None);
        };
        let schema: String = sqlx::query_scalar("SELECT current_schema()")
            .fetch_one(pool)
            .await?;
        let mut inner = sqlx::postgres::PgListener::connect_with(pool).await?;
        inner.listen(CHANGE_CHANNEL).await?;
        Ok(Some(ChangeListener {
            inner,
            prefix: format!("{schema}:"),
        }))
    }
}
