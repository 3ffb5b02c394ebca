-- Service cases (DESIGN.md §12; `serve.rs`), after the evidence tables: their own series (a service case is keyed by
-- offered load and lengths, not by phase, batch and context), one result per case per run,
-- and per repeat the load generator's result object exactly as it was written (so verdicts can
-- be recomputed by re-reading it) plus its metrics as rows of a generalised metric table: a
-- file holds whichever percentiles its generator was asked for (`p50`, `p90`, `p99.9`, ...),
-- so one row per (result, repeat, metric) holds any set and makes history one indexed query.
-- Baseline moves of service cases are a table of their own, append-only like the others.
CREATE TABLE serve_series (
    id              INTEGER PRIMARY KEY,
    suite           TEXT NOT NULL,
    model           TEXT NOT NULL,
    request_rate    TEXT NOT NULL,
    -- 0: not set (no concurrency limit, lengths not fixed)
    max_concurrency INTEGER NOT NULL,
    input_len       INTEGER NOT NULL,
    output_len      INTEGER NOT NULL,
    gpu_sku         TEXT NOT NULL,
    UNIQUE (suite, model, request_rate, max_concurrency, input_len, output_len, gpu_sku)
) STRICT;

CREATE TABLE serve_results (
    id                INTEGER PRIMARY KEY,
    run_id            INTEGER NOT NULL REFERENCES runs (id),
    series_id         INTEGER NOT NULL REFERENCES serve_series (id),
    run_started_at_ns INTEGER NOT NULL,
    verdict           TEXT CHECK (verdict IN ('pass', 'regressed', 'improved', 'inconclusive',
                                              'new', 'missing', 'invalid', 'error')),
    error             TEXT,
    settings_json     TEXT,
    decision_json     TEXT,
    estimate_json     TEXT,
    stderr_tail       TEXT,
    UNIQUE (run_id, series_id)
) STRICT;

CREATE TABLE serve_repeats (
    result_id   INTEGER NOT NULL REFERENCES serve_results (id),
    repeat      INTEGER NOT NULL,
    source      TEXT NOT NULL,
    schema_name TEXT NOT NULL,
    raw_json    TEXT NOT NULL,
    PRIMARY KEY (result_id, repeat)
) STRICT, WITHOUT ROWID;

CREATE TABLE serve_metrics (
    result_id INTEGER NOT NULL REFERENCES serve_results (id),
    repeat    INTEGER NOT NULL,
    metric    TEXT NOT NULL,
    value     REAL NOT NULL,
    PRIMARY KEY (result_id, repeat, metric)
) STRICT, WITHOUT ROWID;

CREATE TABLE serve_baseline_moves (
    id          INTEGER PRIMARY KEY,
    series_id   INTEGER NOT NULL REFERENCES serve_series (id),
    result_id   INTEGER NOT NULL REFERENCES serve_results (id),
    kind        TEXT NOT NULL CHECK (kind IN ('promote', 'accept', 'import')),
    reason      TEXT NOT NULL,
    moved_at_ns INTEGER NOT NULL
) STRICT;

CREATE INDEX serve_results_by_run ON serve_results (run_id);
CREATE INDEX serve_results_by_series_time ON serve_results (series_id, run_started_at_ns, id);
CREATE INDEX serve_baseline_moves_by_series ON serve_baseline_moves (series_id, id);

CREATE TRIGGER serve_results_append_only_update BEFORE UPDATE ON serve_results
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER serve_results_append_only_delete BEFORE DELETE ON serve_results
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER serve_repeats_append_only_update BEFORE UPDATE ON serve_repeats
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER serve_repeats_append_only_delete BEFORE DELETE ON serve_repeats
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER serve_metrics_append_only_update BEFORE UPDATE ON serve_metrics
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER serve_metrics_append_only_delete BEFORE DELETE ON serve_metrics
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER serve_baseline_moves_append_only_update BEFORE UPDATE ON serve_baseline_moves
    BEGIN SELECT RAISE(ABORT, 'baseline history is append-only'); END;
CREATE TRIGGER serve_baseline_moves_append_only_delete BEFORE DELETE ON serve_baseline_moves
    BEGIN SELECT RAISE(ABORT, 'baseline history is append-only'); END;
