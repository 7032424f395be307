-- Skill vectors for the semantic ranking stage, one per (embedder model, revision content digest):
-- computed once, shared by every server and restart (SQLite). `vector` is `dim` little-endian f32.
CREATE TABLE skill_vectors (
    model       TEXT NOT NULL,
    digest      TEXT NOT NULL,
    dim         INTEGER NOT NULL,
    vector      BLOB NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (model, digest)
);
