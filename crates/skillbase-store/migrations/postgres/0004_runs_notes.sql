-- Runs of skill revisions (drift detection) and per-session note blocks (PostgreSQL).
CREATE TABLE runs (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id   TEXT NOT NULL,
    agent        TEXT NOT NULL,
    skill_id     BIGINT NOT NULL REFERENCES skills(id),
    scope        TEXT NOT NULL,
    skill        TEXT NOT NULL,
    rev          BIGINT NOT NULL,
    started_at   BIGINT NOT NULL,
    ended_at     BIGINT,
    outcome      TEXT,
    note         TEXT NOT NULL DEFAULT '',
    calls        BIGINT NOT NULL DEFAULT 0,
    failed_calls BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX runs_skill ON runs (skill_id, rev, id);
CREATE INDEX runs_session ON runs (session_id, id);

CREATE TABLE notes (
    session_id TEXT PRIMARY KEY,
    text       TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);
