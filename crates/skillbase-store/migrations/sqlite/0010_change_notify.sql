-- PostgreSQL announces writes to other servers with NOTIFY (its 0010_change_notify). SQLite has
-- no such thing: the processes sharing a file apply each other's writes by polling. Nothing to
-- change here; the migration keeps both backends at one schema version.
SELECT 1;
