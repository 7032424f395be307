-- API tokens: only the SHA-256 of the secret is kept; agent NULL means an admin token (SQLite).
CREATE TABLE api_tokens (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    label       TEXT NOT NULL,
    hash        TEXT NOT NULL UNIQUE,
    agent       TEXT,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
);
