-- Sessions and their activations (SQLite).
CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    agent      TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE activations (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    scope      TEXT NOT NULL,
    skill      TEXT NOT NULL,
    rev        INTEGER NOT NULL,
    reason     TEXT NOT NULL,
    at         INTEGER NOT NULL
);
CREATE INDEX activations_session ON activations (session_id);
