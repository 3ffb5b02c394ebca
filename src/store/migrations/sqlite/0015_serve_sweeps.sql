-- Serving sweeps (#32, docs/serve.md "Sweeps"): a sweep of request rates or concurrency limits is
-- one service case, its points the files it holds. The series gains the swept axis (`rate`,
-- `conc`, '' for a single point), part of the case key; `SQLite` cannot change a table's
-- constraint in place, so the table is rebuilt keeping every id (foreign keys are off for the
-- migration, see `schema::migrate`). Each file of a sweep says which point and which repetition
-- of the sweep it is, on how many GPUs it ran, and where it lies on the frontier (interactivity
-- = 1000 / TPOT ms, output tokens/s per GPU): the frontier is derived once, as written, and
-- stored with the files it came from.
CREATE TABLE serve_series_v13 (
    id              INTEGER PRIMARY KEY,
    suite           TEXT NOT NULL,
    model           TEXT NOT NULL,
    request_rate    TEXT NOT NULL,
    -- 0: not set (no concurrency limit, lengths not fixed)
    max_concurrency INTEGER NOT NULL,
    input_len       INTEGER NOT NULL,
    output_len      INTEGER NOT NULL,
    gpu_sku         TEXT NOT NULL,
    sweep           TEXT NOT NULL DEFAULT '' CHECK (sweep IN ('', 'rate', 'conc')),
    UNIQUE (suite, model, request_rate, max_concurrency, input_len, output_len, sweep, gpu_sku)
) STRICT;
INSERT INTO serve_series_v13
        (id, suite, model, request_rate, max_concurrency, input_len, output_len, gpu_sku, sweep)
    SELECT id, suite, model, request_rate, max_concurrency, input_len, output_len, gpu_sku, ''
    FROM serve_series;
DROP TABLE serve_series;
ALTER TABLE serve_series_v13 RENAME TO serve_series;

CREATE TABLE serve_sweep_points (
    result_id                INTEGER NOT NULL,
    repeat                   INTEGER NOT NULL,
    point                    TEXT NOT NULL,
    sweep_repeat             INTEGER NOT NULL,
    gpus                     INTEGER NOT NULL CHECK (gpus > 0),
    interactivity_tok_s_user REAL,
    throughput_tok_s_gpu     REAL,
    PRIMARY KEY (result_id, repeat),
    FOREIGN KEY (result_id, repeat) REFERENCES serve_repeats (result_id, repeat)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER serve_sweep_points_append_only_update BEFORE UPDATE ON serve_sweep_points
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER serve_sweep_points_append_only_delete BEFORE DELETE ON serve_sweep_points
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
