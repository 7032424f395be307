-- Learning (issue 19): what a session did, kept. An agent with `record_conversations` records
-- each turn's user message (redacted) as a `user_message` event; a conversation imported with
-- POST /v1/sessions/{id}/transcript records its user messages the same way and its tool calls
-- as `transcript_call` events. Both are conversation records the retention job may trim, like
-- calls and turns (EventKind::TRIMMABLE, the list below).
CREATE OR REPLACE FUNCTION skillbase_events_retention() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' AND EXISTS (SELECT 1 FROM retention_job)
        AND OLD.kind IN ('tool_called', 'call_refused', 'call_started', 'call_finished', 'skill_activated', 'skill_evicted', 'turn', 'catalog_truncated', 'user_message', 'transcript_call') THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'events are append-only, trimmed only by the retention job';
END;
$$ LANGUAGE plpgsql;
