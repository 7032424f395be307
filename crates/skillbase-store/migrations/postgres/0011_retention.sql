-- Retention (issue 14): events stay append-only, and only the retention job trims them. The job
-- marks its own transaction with a row in retention_job (inserted first, deleted before commit,
-- so no other transaction ever sees it) and records what it removed as an events_trimmed event.
-- Even the job may remove only calls, turns and activations (EventKind::TRIMMABLE); revisions
-- are never deleted and events never updated.
CREATE TABLE retention_job (id BIGINT PRIMARY KEY);
CREATE FUNCTION skillbase_events_retention() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' AND EXISTS (SELECT 1 FROM retention_job)
        AND OLD.kind IN ('tool_called', 'call_refused', 'call_started', 'call_finished', 'skill_activated', 'skill_evicted', 'turn', 'catalog_truncated') THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'events are append-only, trimmed only by the retention job';
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER events_append_only ON events;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION skillbase_events_retention();
CREATE INDEX events_kind_at ON events (kind, at);
