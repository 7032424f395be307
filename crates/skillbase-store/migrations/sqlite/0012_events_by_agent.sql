-- The doctor (issue 17) reads an agent's newest turns: events by agent and kind, newest first.
CREATE INDEX events_agent_kind ON events (agent, kind, id);
