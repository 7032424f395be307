-- Skillbase schema, version 1 (PostgreSQL).
CREATE TABLE blobs (
    digest TEXT PRIMARY KEY,
    size   BIGINT NOT NULL,
    bytes  BYTEA NOT NULL
);

CREATE TABLE skills (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope         TEXT NOT NULL,
    name          TEXT NOT NULL,
    status        TEXT NOT NULL,
    active_rev    BIGINT NOT NULL,
    head_rev      BIGINT NOT NULL,
    seed_path     TEXT,
    diverged_digest TEXT,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    UNIQUE (scope, name)
);

CREATE TABLE revisions (
    skill_id      BIGINT NOT NULL REFERENCES skills(id),
    rev           BIGINT NOT NULL,
    bundle_digest TEXT NOT NULL,
    author        TEXT NOT NULL,
    message       TEXT NOT NULL,
    state         TEXT NOT NULL DEFAULT 'committed',
    created_at    BIGINT NOT NULL,
    PRIMARY KEY (skill_id, rev)
);

CREATE TABLE revision_files (
    skill_id   BIGINT NOT NULL,
    rev        BIGINT NOT NULL,
    path       TEXT NOT NULL,
    digest     TEXT NOT NULL REFERENCES blobs(digest),
    executable BOOLEAN NOT NULL,
    PRIMARY KEY (skill_id, rev, path),
    FOREIGN KEY (skill_id, rev) REFERENCES revisions(skill_id, rev)
);

CREATE TABLE agents (
    name       TEXT PRIMARY KEY,
    config     TEXT NOT NULL,
    version    BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE events (
    id      BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at      BIGINT NOT NULL,
    kind    TEXT NOT NULL,
    scope   TEXT,
    skill   TEXT,
    rev     BIGINT,
    agent   TEXT,
    session TEXT,
    actor   TEXT,
    data    TEXT NOT NULL
);
CREATE INDEX events_skill ON events (scope, skill);
CREATE INDEX events_session ON events (session);

CREATE FUNCTION skillbase_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION skillbase_append_only();
CREATE TRIGGER revisions_no_delete BEFORE DELETE ON revisions
    FOR EACH ROW EXECUTE FUNCTION skillbase_append_only();
