-- Skill usage (issue 39): per skill, agent, revision, day, kind and reason, a count and tokens,
-- kept in the transaction that appends each event (sql/usage.rs), so the figures survive the
-- retention job's trimming of the events they came from. Backfilled below from the events
-- there are, with the rules of src/usage.rs (`deltas`); the kinds are listed in the SQLite
-- migration of the same number.
CREATE TABLE skill_usage (
    skill  TEXT NOT NULL,
    agent  TEXT NOT NULL,
    rev    BIGINT NOT NULL,
    day    BIGINT NOT NULL,
    kind   TEXT NOT NULL,
    reason TEXT NOT NULL,
    count  BIGINT NOT NULL,
    tokens BIGINT NOT NULL,
    PRIMARY KEY (skill, agent, rev, day, kind, reason)
);
CREATE INDEX skill_usage_agent ON skill_usage (agent, kind, day);
CREATE INDEX skill_usage_kind ON skill_usage (kind, day);

CREATE TABLE skill_last_used (
    skill TEXT NOT NULL,
    agent TEXT NOT NULL,
    day   BIGINT NOT NULL,
    PRIMARY KEY (skill, agent)
);

CREATE TEMPORARY TABLE usage_events AS
SELECT kind, skill, COALESCE(agent, '') AS agent, COALESCE(rev, 0) AS rev, at / 86400000 AS day, data::jsonb AS d
FROM events WHERE kind IN ('skill_activated', 'turn', 'run_finished', 'disabled', 'drift_reverted');

INSERT INTO skill_usage (skill, agent, rev, day, kind, reason, count, tokens)
SELECT skill, agent, rev, day, 'activated', reason, COUNT(*), SUM(tokens) FROM (
    SELECT skill, agent, rev, day,
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
        SELECT skill, agent, rev, day,
            CASE WHEN jsonb_typeof(d -> 'reason') = 'string' THEN d ->> 'reason' ELSE '' END AS r,
            CASE WHEN jsonb_typeof(d -> 'tokens') = 'number' THEN (d ->> 'tokens')::numeric::bigint ELSE 0 END AS tokens
        FROM usage_events WHERE kind = 'skill_activated' AND skill IS NOT NULL
    ) a
) b GROUP BY skill, agent, rev, day, reason;

INSERT INTO skill_usage (skill, agent, rev, day, kind, reason, count, tokens)
SELECT '', agent, 0, day, 'turn', '', COUNT(*),
    SUM(CASE WHEN jsonb_typeof(d -> 'tokens' -> 'total') = 'number' THEN (d -> 'tokens' ->> 'total')::numeric::bigint ELSE 0 END)
FROM usage_events WHERE kind = 'turn'
GROUP BY agent, day;

INSERT INTO skill_usage (skill, agent, rev, day, kind, reason, count, tokens)
SELECT name, agent, 0, day, 'listed', reason, COUNT(*), 0 FROM (
    SELECT j.value AS name, e.agent, e.day, 'full' AS reason
    FROM usage_events e, jsonb_array_elements_text(e.d -> 'catalog' -> 'full') j
    WHERE e.kind = 'turn' AND jsonb_typeof(e.d -> 'catalog' -> 'full') = 'array'
    UNION ALL
    SELECT j.value ->> 'name', e.agent, e.day, 'full'
    FROM usage_events e, jsonb_array_elements(e.d -> 'catalog' -> 'shown') j
    WHERE e.kind = 'turn' AND jsonb_typeof(e.d -> 'catalog' -> 'shown') = 'array'
        AND jsonb_typeof(e.d -> 'catalog' -> 'full') IS DISTINCT FROM 'array'
        AND jsonb_typeof(j.value -> 'name') = 'string'
    UNION ALL
    SELECT n.value, e.agent, e.day, 'name_only'
    FROM usage_events e, jsonb_array_elements(e.d -> 'catalog' -> 'name_only' -> 'by_reason') g,
        jsonb_array_elements_text(g.value -> 'names') n
    WHERE e.kind = 'turn' AND jsonb_typeof(e.d -> 'catalog' -> 'name_only' -> 'by_reason') = 'array'
        AND jsonb_typeof(g.value -> 'names') = 'array'
) l GROUP BY name, agent, day, reason;

INSERT INTO skill_usage (skill, agent, rev, day, kind, reason, count, tokens)
SELECT '', agent, 0, day, 'listed', reason, SUM(n), 0 FROM (
    SELECT e.agent, e.day, 'name_only_unnamed' AS reason, (g.value ->> 'count')::numeric::bigint AS n
    FROM usage_events e, jsonb_array_elements(e.d -> 'catalog' -> 'name_only' -> 'by_reason') g
    WHERE e.kind = 'turn' AND jsonb_typeof(e.d -> 'catalog' -> 'name_only' -> 'by_reason') = 'array'
        AND jsonb_typeof(g.value -> 'names') IS DISTINCT FROM 'array' AND jsonb_typeof(g.value -> 'count') = 'number'
    UNION ALL
    SELECT agent, day, 'omitted', (d -> 'catalog' -> 'omitted' ->> 'count')::numeric::bigint
    FROM usage_events WHERE kind = 'turn' AND jsonb_typeof(d -> 'catalog' -> 'omitted' -> 'count') = 'number'
) o WHERE n > 0 GROUP BY agent, day, reason;

INSERT INTO skill_usage (skill, agent, rev, day, kind, reason, count, tokens)
SELECT skill, agent, rev, day, 'run', d ->> 'outcome', COUNT(*), 0
FROM usage_events WHERE kind = 'run_finished' AND skill IS NOT NULL AND jsonb_typeof(d -> 'outcome') = 'string'
GROUP BY skill, agent, rev, day, d ->> 'outcome';

INSERT INTO skill_usage (skill, agent, rev, day, kind, reason, count, tokens)
SELECT skill, agent, rev, day, 'unfollowed', '', COUNT(*), 0
FROM usage_events WHERE kind = 'run_finished' AND skill IS NOT NULL
    AND jsonb_typeof(d -> 'calls') = 'number' AND (d ->> 'calls')::numeric = 0
GROUP BY skill, agent, rev, day;

INSERT INTO skill_usage (skill, agent, rev, day, kind, reason, count, tokens)
SELECT skill, agent, rev, day, 'status', CASE kind WHEN 'drift_reverted' THEN 'drift_reverted' ELSE 'drift_disabled' END, COUNT(*), 0
FROM usage_events WHERE skill IS NOT NULL
    AND (kind = 'drift_reverted' OR (kind = 'disabled' AND jsonb_typeof(d -> 'reason' -> 'drift') = 'string'))
GROUP BY skill, agent, rev, day, 6;

INSERT INTO skill_last_used (skill, agent, day)
SELECT skill, agent, MAX(day) FROM skill_usage WHERE kind = 'activated' GROUP BY skill, agent;

DROP TABLE usage_events;
