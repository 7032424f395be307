-- Runs of skill revisions (drift detection) and per-session note blocks (SQLite).
CREATE TABLE runs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id   TEXT NOT NULL,
    agent        TEXT NOT NULL,
    skill_id     INTEGER NOT NULL REFERENCES skills(id),
    scope        TEXT NOT NULL,
    skill        TEXT NOT NULL,
    rev          INTEGER NOT NULL,
    started_at   INTEGER NOT NULL,
    ended_at     INTEGER,
    outcome      TEXT,             -- success | failure
    note         TEXT NOT NULL DEFAULT '',
    calls        INTEGER NOT NULL DEFAULT 0,
    failed_calls INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX runs_skill ON runs (skill_id, rev, id);
CREATE INDEX runs_session ON runs (session_id, id);

CREATE TABLE notes (
    session_id TEXT PRIMARY KEY,
    text       TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
