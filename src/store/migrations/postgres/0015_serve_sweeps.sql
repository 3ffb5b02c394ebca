-- Serving sweeps (sqlite/0015_serve_sweeps.sql says what each holds). PostgreSQL changes the
-- series' constraint in place where SQLite rebuilds the table (its name, which PostgreSQL
-- shortened from 0006's columns, is looked up); the column order matches the rebuilt table.
ALTER TABLE serve_series ADD COLUMN sweep TEXT NOT NULL DEFAULT ''
    CHECK (sweep IN ('', 'rate', 'conc'));
DO $m$
DECLARE
    old_key text;
BEGIN
    SELECT conname INTO old_key FROM pg_constraint
    WHERE conrelid = 'serve_series'::regclass AND contype = 'u';
    EXECUTE format('ALTER TABLE serve_series DROP CONSTRAINT %I', old_key);
END
$m$;
ALTER TABLE serve_series ADD CONSTRAINT serve_series_case_key
    UNIQUE (suite, model, request_rate, max_concurrency, input_len, output_len, sweep, gpu_sku);

CREATE TABLE serve_sweep_points (
    result_id                BIGINT NOT NULL,
    repeat                   BIGINT NOT NULL,
    point                    TEXT NOT NULL,
    sweep_repeat             BIGINT NOT NULL,
    gpus                     BIGINT NOT NULL CHECK (gpus > 0),
    interactivity_tok_s_user DOUBLE PRECISION,
    throughput_tok_s_gpu     DOUBLE PRECISION,
    PRIMARY KEY (result_id, repeat),
    FOREIGN KEY (result_id, repeat) REFERENCES serve_repeats (result_id, repeat)
);

CREATE TRIGGER serve_sweep_points_append_only_update BEFORE UPDATE ON serve_sweep_points FOR EACH ROW EXECUTE FUNCTION utilgate_append_only('results are append-only');
CREATE TRIGGER serve_sweep_points_append_only_delete BEFORE DELETE ON serve_sweep_points FOR EACH ROW EXECUTE FUNCTION utilgate_append_only('results are append-only');
