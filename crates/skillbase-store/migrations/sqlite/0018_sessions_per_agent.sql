-- Sessions keyed by (agent, id) (issue 35): the same id names two unrelated sessions for two
-- agents, so that creating one tells an agent nothing about another agent's sessions.
-- Activations and notes carry their session's agent; runs already do. SQLite cannot change a
-- primary key in place: the three tables are rebuilt, every row copied.
CREATE TABLE sessions_by_agent (
    agent      TEXT NOT NULL,
    id         TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (agent, id)
);
INSERT INTO sessions_by_agent (agent, id, created_at, updated_at)
    SELECT agent, id, created_at, updated_at FROM sessions;

CREATE TABLE activations_by_agent (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    agent      TEXT NOT NULL,
    session_id TEXT NOT NULL,
    scope      TEXT NOT NULL,
    skill      TEXT NOT NULL,
    rev        INTEGER NOT NULL,
    reason     TEXT NOT NULL,
    at         INTEGER NOT NULL,
    arguments  TEXT,
    FOREIGN KEY (agent, session_id) REFERENCES sessions_by_agent (agent, id)
);
INSERT INTO activations_by_agent (id, agent, session_id, scope, skill, rev, reason, at, arguments)
    SELECT a.id, s.agent, a.session_id, a.scope, a.skill, a.rev, a.reason, a.at, a.arguments
    FROM activations a JOIN sessions s ON s.id = a.session_id;

-- A note's agent is its session's; a note without a session row (none is written so, but an
-- old store may hold one) takes the agent of the session's runs, else stays reachable by no one.
CREATE TABLE notes_by_agent (
    agent      TEXT NOT NULL,
    session_id TEXT NOT NULL,
    text       TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (agent, session_id)
);
INSERT INTO notes_by_agent (agent, session_id, text, updated_at)
    SELECT COALESCE(
               (SELECT s.agent FROM sessions s WHERE s.id = n.session_id),
               (SELECT r.agent FROM runs r WHERE r.session_id = n.session_id ORDER BY r.id DESC LIMIT 1),
               ''),
           n.session_id, n.text, n.updated_at
    FROM notes n;

DROP TABLE activations;
DROP TABLE notes;
DROP TABLE sessions;
ALTER TABLE sessions_by_agent RENAME TO sessions;
ALTER TABLE activations_by_agent RENAME TO activations;
ALTER TABLE notes_by_agent RENAME TO notes;
CREATE INDEX activations_session ON activations (agent, session_id);
DROP INDEX runs_session;
CREATE INDEX runs_session ON runs (agent, session_id, id);
CREATE INDEX sessions_updated ON sessions (updated_at);
