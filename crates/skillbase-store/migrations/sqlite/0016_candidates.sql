-- Learning (issue 19): outcome-gated staging. A revision an agent writes under
-- `stage_agent_revisions` is stored with state 'candidate' beside the active one; the skill's
-- `candidate` column holds its terms as JSON ({"rev", "percent", "min_runs", "staged_at"}) while
-- it is staged, NULL otherwise. A candidate ends promoted (state 'committed', active), rejected
-- (state 'rejected') or superseded (state 'superseded', by any other activation).
ALTER TABLE skills ADD COLUMN candidate TEXT;
