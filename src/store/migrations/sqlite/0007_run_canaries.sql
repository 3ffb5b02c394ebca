-- The machine canary of each run (`measure::canary`, `compare::canary_shift`): its figures'
-- readings as JSON, written in the run's transaction. Append-only.
CREATE TABLE run_canaries (
    run_id INTEGER PRIMARY KEY REFERENCES runs (id),
    json   TEXT NOT NULL
) STRICT;
CREATE TRIGGER run_canaries_append_only_update BEFORE UPDATE ON run_canaries
    BEGIN SELECT RAISE(ABORT, 'run canaries are append-only'); END;
CREATE TRIGGER run_canaries_append_only_delete BEFORE DELETE ON run_canaries
    BEGIN SELECT RAISE(ABORT, 'run canaries are append-only'); END;
