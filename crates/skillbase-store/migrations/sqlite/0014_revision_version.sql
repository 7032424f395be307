-- Issue 20: the `version` a revision's SKILL.md declares (Semantic Versioning 2.0.0), recorded
-- at write. NULL when it declares none, and for revisions written before this migration (their
-- SKILL.md still holds it; the write path reads it from there when it compares versions).
-- Immutable like the rest of a revision.
ALTER TABLE revisions ADD COLUMN version TEXT;
CREATE TRIGGER revisions_version_immutable BEFORE UPDATE OF version ON revisions
BEGIN SELECT RAISE(ABORT, 'revisions are immutable'); END;
