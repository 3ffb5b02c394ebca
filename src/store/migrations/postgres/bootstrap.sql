-- Run before the first migration on PostgreSQL (idempotent): the version table (SQLite keeps the
-- version in `PRAGMA user_version`) and the function the append-only triggers call.
CREATE TABLE IF NOT EXISTS utilgate_schema (version BIGINT NOT NULL);
CREATE OR REPLACE FUNCTION utilgate_append_only() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
    RAISE EXCEPTION '%', TG_ARGV[0];
END
$f$;
