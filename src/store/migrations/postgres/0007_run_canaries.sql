-- The machine canary of each run (`measure::canary`, `compare::canary_shift`): its figures'
-- readings as JSON, written in the run's transaction. Append-only.
CREATE TABLE run_canaries (
    run_id BIGINT PRIMARY KEY REFERENCES runs (id),
    json   TEXT NOT NULL
);
CREATE TRIGGER run_canaries_append_only_update BEFORE UPDATE ON run_canaries FOR EACH ROW EXECUTE FUNCTION utilgate_append_only('run canaries are append-only');
CREATE TRIGGER run_canaries_append_only_delete BEFORE DELETE ON run_canaries FOR EACH ROW EXECUTE FUNCTION utilgate_append_only('run canaries are append-only');
