-- Whether an event can change the index or the agents, decided by the store when the event is
-- written (`sql::changes_index`, from the kind), so that a new kind of the runtime's own events
-- needs no migration: the partial index below covers the rows `Store::sync_changes` polls. Rows
-- written before this migration keep TRUE (they are older than any position a server resumes
-- from, so they are not read again); a server of an older build writes TRUE too, so nothing it
-- writes is missed.
ALTER TABLE events ADD COLUMN changes_index BOOLEAN NOT NULL DEFAULT TRUE;
DROP INDEX events_index_changes;
CREATE INDEX events_changes_index ON events (id) WHERE changes_index;
