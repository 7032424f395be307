-- Vault entries: the value is encrypted by the runtime before it reaches the store (PostgreSQL).
CREATE TABLE vault_entries (
    name        TEXT PRIMARY KEY,
    description TEXT NOT NULL,
    nonce       BYTEA NOT NULL,
    ciphertext  BYTEA NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
