-- Vault entries: the value is encrypted by the runtime before it reaches the store (SQLite).
CREATE TABLE vault_entries (
    name        TEXT PRIMARY KEY,
    description TEXT NOT NULL,
    nonce       BLOB NOT NULL,
    ciphertext  BLOB NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
