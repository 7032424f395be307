-- Skillbase schema, version 1 (SQLite).
CREATE TABLE blobs (
    digest TEXT PRIMARY KEY,          -- sha256:<hex> of the bytes
    size   INTEGER NOT NULL,
    bytes  BLOB NOT NULL
);

CREATE TABLE skills (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    scope         TEXT NOT NULL,      -- 'shared' or 'agent:<name>'
    name          TEXT NOT NULL,
    status        TEXT NOT NULL,      -- active | disabled | retired
    active_rev    INTEGER NOT NULL,
    head_rev      INTEGER NOT NULL,   -- highest revision number written
    seed_path     TEXT,               -- the seed folder this skill follows, while it follows one
    diverged_digest TEXT,             -- seed content last reported as diverged
    created_at    INTEGER NOT NULL,   -- unix milliseconds
    updated_at    INTEGER NOT NULL,
    UNIQUE (scope, name)
);

CREATE TABLE revisions (
    skill_id      INTEGER NOT NULL REFERENCES skills(id),
    rev           INTEGER NOT NULL,
    bundle_digest TEXT NOT NULL,
    author        TEXT NOT NULL,
    message       TEXT NOT NULL,
    state         TEXT NOT NULL DEFAULT 'committed',  -- committed | pending
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (skill_id, rev)
);

CREATE TABLE revision_files (
    skill_id   INTEGER NOT NULL,
    rev        INTEGER NOT NULL,
    path       TEXT NOT NULL,
    digest     TEXT NOT NULL REFERENCES blobs(digest),
    executable INTEGER NOT NULL,
    PRIMARY KEY (skill_id, rev, path),
    FOREIGN KEY (skill_id, rev) REFERENCES revisions(skill_id, rev)
);

CREATE TABLE agents (
    name       TEXT PRIMARY KEY,
    config     TEXT NOT NULL,         -- JSON
    version    INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE events (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    at      INTEGER NOT NULL,
    kind    TEXT NOT NULL,
    scope   TEXT,
    skill   TEXT,
    rev     INTEGER,
    agent   TEXT,
    session TEXT,
    actor   TEXT,
    data    TEXT NOT NULL             -- JSON
);
CREATE INDEX events_skill ON events (scope, skill);
CREATE INDEX events_session ON events (session);

-- Append-only: revisions and events are never updated or deleted.
CREATE TRIGGER revisions_immutable BEFORE UPDATE OF skill_id, rev, bundle_digest, author, message, created_at ON revisions
BEGIN SELECT RAISE(ABORT, 'revisions are immutable'); END;
CREATE TRIGGER revisions_no_delete BEFORE DELETE ON revisions
BEGIN SELECT RAISE(ABORT, 'revisions are never deleted'); END;
CREATE TRIGGER events_immutable BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
