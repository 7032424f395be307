-- API tokens: only the SHA-256 of the secret is kept; agent NULL means an admin token (PostgreSQL).
CREATE TABLE api_tokens (
    id          BIGSERIAL PRIMARY KEY,
    label       TEXT NOT NULL,
    hash        TEXT NOT NULL UNIQUE,
    agent       TEXT,
    created_at  BIGINT NOT NULL,
    revoked_at  BIGINT
);
