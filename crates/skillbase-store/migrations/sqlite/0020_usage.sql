-- Skill usage (issue 39): per skill, agent, revision, day, kind and reason, a count and tokens,
-- kept in the transaction that appends each event (sql/usage.rs), so the figures survive the
-- retention job's trimming of the events they came from. Backfilled below from the events
-- there are, with the rules of src/usage.rs (`deltas`).
--   kind 'activated': a skill_activated event; reason eager|trigger|path|explicit|load|companion|other
--   kind 'listed':    a turn's catalog; reason full|name_only (skill ''  for name_only_unnamed, omitted)
--   kind 'turn':      skill '', one per turn of the agent (tokens: the turn's total)
--   kind 'run':       a run_finished event; reason its outcome
--   kind 'unfollowed': a run that ended with no call
--   kind 'status':    drift_disabled | drift_reverted
CREATE TABLE skill_usage (
    skill  TEXT NOT NULL,
    agent  TEXT NOT NULL,
    rev    INTEGER NOT NULL,
    day    INTEGER NOT NULL,
    kind   TEXT NOT NULL,
    reason TEXT NOT NULL,
    count  INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    PRIMARY KEY (skill, agent, rev, day, kind, reason)
);
CREATE INDEX skill_usage_agent ON skill_usage (agent, kind, day);
CREATE INDEX skill_usage_kind ON skill_usage (kind, day);

-- The last day each skill was activated for each agent (the never-used list reads it).
CREATE TABLE skill_last_used (
    skill TEXT NOT NULL,
    agent TEXT NOT NULL,
    day   INTEGER NOT NULL,
    PRIMARY KEY (skill, agent)
);

INSERT INTO skill_usage (skill, agent, rev, day, kind, reason, count, tokens)
SELECT skill, agent, rev, day, 'activated', reason, COUNT(*), SUM(tokens) FROM (
    SELECT skill, COALESCE(agent, '') AS agent, COALESCE(rev, 0) AS rev, at / 86400000 AS day,
        CASE
            WHEN r = 'eager' OR r LIKE 'eager:%' OR r LIKE 'eager %' THEN 'eager'
            WHEN r = 'trigger' OR r LIKE 'trigger:%' OR r LIKE 'trigger %' THEN 'trigger'
            WHEN r = 'path' OR r LIKE 'path:%' OR r LIKE 'path %' THEN 'path'
            WHEN r = 'explicit' OR r LIKE 'explicit:%' OR r LIKE 'explicit %' THEN 'explicit'
            WHEN r = 'load' OR r LIKE 'load:%' OR r LIKE 'load %' THEN 'load'
            WHEN r = 'companion' OR r LIKE 'companion:%' OR r LIKE 'companion %' THEN 'companion'
            ELSE 'other'
        END AS reason,
        tokens
    FROM (
        SELECT skill, agent, rev, at,
            COALESCE(json_extract(data, '$.reason'), '') AS r,
            CASE WHEN json_type(data, '$.tokens') = 'integer' THEN json_extract(data, '$.tokens') ELSE 0 END AS tokens
        FROM events WHERE kind = 'skill_activated' AND skill IS NOT NULL AND json_valid(data)
    )
) GROUP BY skill, agent, rev, day, reason;

INSERT INTO skill_usage (skill, agent, rev, day, kind, reason, count, tokens)
SELECT '', COALESCE(agent, ''), 0, at / 86400000, 'turn', '', COUNT(*),
    SUM(CASE WHEN json_type(data, '$.tokens.total') = 'integer' THEN json_extract(data, '$.tokens.total') ELSE 0 END)
FROM events WHERE kind = 'turn' AND json_valid(data)
GROUP BY 2, 4;

INSERT INTO skill_usage (skill, agent, rev, day, kind, reason, count, tokens)
SELECT name, agent, 0, day, 'listed', reason, COUNT(*), 0 FROM (
    SELECT j.value AS name, COALESCE(e.agent, '') AS agent, e.at / 86400000 AS day, 'full' AS reason
    FROM events e, json_each(e.data, '$.catalog.full') j
    WHERE e.kind = 'turn' AND json_valid(e.data) AND json_type(e.data, '$.catalog.full') = 'array' AND j.type = 'text'
    UNION ALL
    SELECT json_extract(j.value, '$.name'), COALESCE(e.agent, ''), e.at / 86400000, 'full'
    FROM events e, json_each(e.data, '$.catalog.shown') j
    WHERE e.kind = 'turn' AND json_valid(e.data) AND json_type(e.data, '$.catalog.shown') = 'array'
        AND json_type(e.data, '$.catalog.full') IS NOT 'array' AND json_type(j.value, '$.name') = 'text'
    UNION ALL
    SELECT n.value, COALESCE(e.agent, ''), e.at / 86400000, 'name_only'
    FROM events e, json_each(e.data, '$.catalog.name_only.by_reason') g, json_each(g.value, '$.names') n
    WHERE e.kind = 'turn' AND json_valid(e.data) AND json_type(e.data, '$.catalog.name_only.by_reason') = 'array'
        AND json_type(g.value, '$.names') = 'array' AND n.type = 'text'
) GROUP BY name, agent, day, reason;

INSERT INTO skill_usage (skill, agent, rev, day, kind, reason, count, tokens)
SELECT '', agent, 0, day, 'listed', reason, SUM(n), 0 FROM (
    SELECT COALESCE(e.agent, '') AS agent, e.at / 86400000 AS day, 'name_only_unnamed' AS reason,
        json_extract(g.value, '$.count') AS n
    FROM events e, json_each(e.data, '$.catalog.name_only.by_reason') g
    WHERE e.kind = 'turn' AND json_valid(e.data) AND json_type(e.data, '$.catalog.name_only.by_reason') = 'array'
        AND json_type(g.value, '$.names') IS NOT 'array' AND json_type(g.value, '$.count') = 'integer'
    UNION ALL
    SELECT COALESCE(agent, ''), at / 86400000, 'omitted', json_extract(data, '$.catalog.omitted.count')
    FROM events WHERE kind = 'turn' AND json_valid(data) AND json_type(data, '$.catalog.omitted.count') = 'integer'
) WHERE n > 0 GROUP BY agent, day, reason;

INSERT INTO skill_usage (skill, agent, rev, day, kind, reason, count, tokens)
SELECT skill, COALESCE(agent, ''), COALESCE(rev, 0), at / 86400000, 'run', json_extract(data, '$.outcome'), COUNT(*), 0
FROM events WHERE kind = 'run_finished' AND skill IS NOT NULL AND json_valid(data) AND json_type(data, '$.outcome') = 'text'
GROUP BY 1, 2, 3, 4, 6;

INSERT INTO skill_usage (skill, agent, rev, day, kind, reason, count, tokens)
SELECT skill, COALESCE(agent, ''), COALESCE(rev, 0), at / 86400000, 'unfollowed', '', COUNT(*), 0
FROM events WHERE kind = 'run_finished' AND skill IS NOT NULL AND json_valid(data)
    AND json_type(data, '$.calls') = 'integer' AND json_extract(data, '$.calls') = 0
GROUP BY 1, 2, 3, 4;

INSERT INTO skill_usage (skill, agent, rev, day, kind, reason, count, tokens)
SELECT skill, COALESCE(agent, ''), COALESCE(rev, 0), at / 86400000, 'status',
    CASE kind WHEN 'drift_reverted' THEN 'drift_reverted' ELSE 'drift_disabled' END, COUNT(*), 0
FROM events WHERE skill IS NOT NULL AND json_valid(data)
    AND (kind = 'drift_reverted' OR (kind = 'disabled' AND json_type(data, '$.reason.drift') = 'text'))
GROUP BY 1, 2, 3, 4, 6;

INSERT INTO skill_last_used (skill, agent, day)
SELECT skill, agent, MAX(day) FROM skill_usage WHERE kind = 'activated' GROUP BY skill, agent;
