-- Sessions keyed by (agent, id) (issue 35): the same id names two unrelated sessions for two
-- agents, so that creating one tells an agent nothing about another agent's sessions.
-- Activations and notes carry their session's agent; runs already do. Every row is kept.
ALTER TABLE activations ADD COLUMN agent TEXT;
UPDATE activations a SET agent = s.agent FROM sessions s WHERE s.id = a.session_id;
ALTER TABLE activations ALTER COLUMN agent SET NOT NULL;
ALTER TABLE activations DROP CONSTRAINT activations_session_id_fkey;
ALTER TABLE sessions DROP CONSTRAINT sessions_pkey;
ALTER TABLE sessions ADD PRIMARY KEY (agent, id);
ALTER TABLE activations ADD FOREIGN KEY (agent, session_id) REFERENCES sessions (agent, id);
DROP INDEX activations_session;
CREATE INDEX activations_session ON activations (agent, session_id);
CREATE INDEX sessions_updated ON sessions (updated_at);

-- A note's agent is its session's (else that of the session's last run, else none).
ALTER TABLE notes ADD COLUMN agent TEXT;
UPDATE notes n SET agent = COALESCE(
    (SELECT s.agent FROM sessions s WHERE s.id = n.session_id),
    (SELECT r.agent FROM runs r WHERE r.session_id = n.session_id ORDER BY r.id DESC LIMIT 1),
    '');
ALTER TABLE notes ALTER COLUMN agent SET NOT NULL;
ALTER TABLE notes DROP CONSTRAINT notes_pkey;
ALTER TABLE notes ADD PRIMARY KEY (agent, session_id);

DROP INDEX runs_session;
CREATE INDEX runs_session ON runs (agent, session_id, id);
