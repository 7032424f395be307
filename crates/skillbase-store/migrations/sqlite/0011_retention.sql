-- Retention (issue 14): events stay append-only, and only the retention job trims them. The job
-- marks its own transaction with a row in retention_job (inserted first, deleted before commit,
-- so no other connection ever sees it) and records what it removed as an events_trimmed event.
-- Even the job may remove only calls, turns and activations (EventKind::TRIMMABLE); revisions
-- are never deleted and events never updated.
CREATE TABLE retention_job (id INTEGER PRIMARY KEY);
DROP TRIGGER events_no_delete;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
WHEN NOT EXISTS (SELECT 1 FROM retention_job)
  OR OLD.kind NOT IN ('tool_called', 'call_refused', 'call_started', 'call_finished', 'skill_activated', 'skill_evicted', 'turn', 'catalog_truncated')
BEGIN SELECT RAISE(ABORT, 'events are append-only, trimmed only by the retention job'); END;
-- The job finds old rows by kind and time, and a session's last activity by session.
CREATE INDEX events_kind_at ON events (kind, at);
