CREATE TABLE runs (
    id               INTEGER PRIMARY KEY,
    started_at_ns    INTEGER NOT NULL,
    finished_at_ns   INTEGER NOT NULL,
    git_sha          TEXT,
    branch           TEXT,
    trigger          TEXT,
    pr_number        INTEGER,
    gpu_sku          TEXT NOT NULL,
    gpu_json         TEXT,
    host             TEXT,
    utilgate_version TEXT NOT NULL,
    config_json      TEXT
) STRICT;

CREATE TABLE series (
    id        INTEGER PRIMARY KEY,
    suite     TEXT NOT NULL,
    model     TEXT NOT NULL,
    precision TEXT NOT NULL,
    phase     TEXT NOT NULL CHECK (phase IN ('decode', 'prefill')),
    batch     INTEGER NOT NULL,
    context   INTEGER NOT NULL,
    gpu_sku   TEXT NOT NULL,
    UNIQUE (suite, model, precision, phase, batch, context, gpu_sku)
) STRICT;

CREATE TABLE results (
    id                INTEGER PRIMARY KEY,
    run_id            INTEGER NOT NULL REFERENCES runs (id),
    series_id         INTEGER NOT NULL REFERENCES series (id),
    -- a copy of runs.started_at_ns, so that a case's history walks one index
    run_started_at_ns INTEGER NOT NULL,
    verdict           TEXT CHECK (verdict IN ('pass', 'regressed', 'improved', 'inconclusive',
                                              'new', 'missing', 'invalid', 'error')),
    error             TEXT,
    floor_ms          REAL,
    floor_json        TEXT,
    median_ms         REAL,
    utilisation       REAL,
    mbu               REAL,
    mfu               REAL,
    summary_json      TEXT,
    decision_json     TEXT,
    samples           BLOB NOT NULL,
    warmup            BLOB NOT NULL,
    env_json          TEXT NOT NULL,
    gpu_state_json    TEXT,
    stderr_tail       TEXT,
    UNIQUE (run_id, series_id)
) STRICT;

CREATE TABLE baseline_moves (
    id          INTEGER PRIMARY KEY,
    series_id   INTEGER NOT NULL REFERENCES series (id),
    result_id   INTEGER NOT NULL REFERENCES results (id),
    kind        TEXT NOT NULL CHECK (kind IN ('promote', 'accept', 'import')),
    reason      TEXT NOT NULL,
    moved_at_ns INTEGER NOT NULL
) STRICT;

CREATE TRIGGER runs_append_only_update BEFORE UPDATE ON runs
    BEGIN SELECT RAISE(ABORT, 'runs are append-only'); END;
CREATE TRIGGER runs_append_only_delete BEFORE DELETE ON runs
    BEGIN SELECT RAISE(ABORT, 'runs are append-only'); END;
CREATE TRIGGER results_append_only_update BEFORE UPDATE ON results
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER results_append_only_delete BEFORE DELETE ON results
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER baseline_moves_append_only_update BEFORE UPDATE ON baseline_moves
    BEGIN SELECT RAISE(ABORT, 'baseline history is append-only'); END;
CREATE TRIGGER baseline_moves_append_only_delete BEFORE DELETE ON baseline_moves
    BEGIN SELECT RAISE(ABORT, 'baseline history is append-only'); END;
