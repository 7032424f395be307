-- Issue 20: the `version` a revision's SKILL.md declares (Semantic Versioning 2.0.0), recorded
-- at write. NULL when it declares none, and for revisions written before this migration (their
-- SKILL.md still holds it; the write path reads it from there when it compares versions).
-- Immutable like the rest of a revision.
ALTER TABLE revisions ADD COLUMN version TEXT;
CREATE FUNCTION skillbase_revision_version_fixed() RETURNS trigger AS $$
BEGIN
    IF NEW.version IS DISTINCT FROM OLD.version THEN
        RAISE EXCEPTION 'revisions are immutable';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER revisions_version_immutable BEFORE UPDATE ON revisions
    FOR EACH ROW EXECUTE FUNCTION skillbase_revision_version_fixed();
