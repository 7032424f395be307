-- The events that can change the index or the agents: every kind but the runtime's own (calls,
-- activations, turns, runs, tokens). Servers poll them every second (`Store::sync_changes`);
-- a partial index keeps that poll cheap however many call events there are. The kind list must
-- stay the same as `RUNTIME_KINDS` in src/sql.rs (a test checks it).
CREATE INDEX events_index_changes ON events (id)
WHERE kind NOT IN ('tool_called', 'call_refused', 'call_started', 'call_finished', 'skill_activated', 'skill_evicted', 'turn', 'catalog_truncated', 'run_finished', 'token_created', 'token_revoked');
