-- Writes other servers must apply at once are announced with NOTIFY, which PostgreSQL delivers
-- when the writing transaction commits (and never for one that rolls back): `index` for the
-- events that change the index, the agents or the vault (`changes_index`), `tokens` for token
-- creations and revocations. The payload is `<schema>:<what>`, so stores kept in different
-- schemas of one database ignore each other's. Servers poll as well: a notification lost while a
-- listener reconnects is picked up by the next poll.
CREATE OR REPLACE FUNCTION skillbase_notify_change() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify(
        'skillbase_changes',
        current_schema() || ':' ||
            CASE WHEN NEW.kind IN ('token_created', 'token_revoked') THEN 'tokens' ELSE 'index' END
    );
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER events_notify_change AFTER INSERT ON events FOR EACH ROW
    WHEN (NEW.changes_index OR NEW.kind IN ('token_created', 'token_revoked'))
    EXECUTE FUNCTION skillbase_notify_change();
