-- Scanning (issue 37): the findings of every revision's scan, kept with it. A revision is
-- scanned on arrival (in the same transaction as its write) and again by `skillbase scan
-- --store` when the rules change; each scan is a row, the latest by id is the current one.
-- `verdict` is the highest severity found (NULL: nothing found), `action` what the gate did
-- (off, warn, review; a refused write writes no revision and so no row), `findings` the
-- findings as JSON (skillbase_scan::Finding), `rules` the digest of the rules that scanned it.
CREATE TABLE scans (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    skill_id   INTEGER NOT NULL REFERENCES skills(id),
    rev        INTEGER NOT NULL,
    rules      TEXT NOT NULL,
    verdict    TEXT,
    action     TEXT NOT NULL,
    findings   TEXT NOT NULL,
    scanned_at INTEGER NOT NULL
);
CREATE INDEX scans_by_revision ON scans (skill_id, rev, id);
