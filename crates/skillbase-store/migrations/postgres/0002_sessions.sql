-- Sessions and their activations (PostgreSQL).
CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    agent      TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE activations (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    scope      TEXT NOT NULL,
    skill      TEXT NOT NULL,
    rev        BIGINT NOT NULL,
    reason     TEXT NOT NULL,
    at         BIGINT NOT NULL
);
CREATE INDEX activations_session ON activations (session_id);
