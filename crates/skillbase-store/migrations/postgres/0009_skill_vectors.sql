-- Skill vectors for the semantic ranking stage, one per (embedder model, revision content digest):
-- computed once, shared by every server and restart (PostgreSQL). `vector` is `dim` little-endian f32.
CREATE TABLE skill_vectors (
    model       TEXT NOT NULL,
    digest      TEXT NOT NULL,
    dim         BIGINT NOT NULL,
    vector      BYTEA NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (model, digest)
);
