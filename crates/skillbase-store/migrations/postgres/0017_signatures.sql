-- Supply chain (issue 20): signatures and trust. A revision written with a verified Ed25519
-- signature over (name, version, digest) keeps it here (the signer's fingerprint, and the
-- signature file as JSON, exported beside the skill as SKILL.sig). A trust pin is the signer
-- first seen for a source (a folder, a zip, a git URL, or a [[trust.sources]] prefix): later
-- imports from that source must be signed by it unless the operator accepts a new signer.
CREATE TABLE signatures (
    skill_id   BIGINT NOT NULL REFERENCES skills(id),
    rev        BIGINT NOT NULL,
    signer     TEXT NOT NULL,
    signature  TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (skill_id, rev)
);
CREATE TABLE trust_pins (
    source    TEXT PRIMARY KEY,
    signer    TEXT NOT NULL,
    pinned_at BIGINT NOT NULL,
    actor     TEXT NOT NULL
);
-- Where an imported revision came from, for `skillbase lock`: the source the import named (a
-- folder, a zip, or git+URL), the reference it was read at (a git commit), and the skill's
-- folder inside the source (for git). Written by imports, kept with the revision.
CREATE TABLE revision_sources (
    skill_id  BIGINT NOT NULL REFERENCES skills(id),
    rev       BIGINT NOT NULL,
    source    TEXT NOT NULL,
    reference TEXT,
    path      TEXT,
    PRIMARY KEY (skill_id, rev)
);
