-- Energy per token (#33 item 4): each timed repeat's joules over its timed window, one row per
-- result and repeat (the GPU's energy counter read at both ends of the window, else its power
-- readings integrated), with the enforced power limit read in the window; or, for a repeat
-- that could not be measured (readings too sparse, no counter and a power reading missing),
-- the reason and nothing else. Joules per step, per token and tokens per second per watt are
-- derived from these rows (`compare::energy::figures`); the judgement against the baseline's
-- rides in the result's decision (`decision_json`, "energy").
CREATE TABLE result_energy (
    result_id     INTEGER NOT NULL REFERENCES results (id),
    repeat        INTEGER NOT NULL CHECK (repeat >= 0),
    source        TEXT CHECK (source IN ('counter', 'integral')),
    joules        REAL CHECK (joules > 0),
    steps         INTEGER CHECK (steps > 0),
    window_ms     REAL CHECK (window_ms > 0),
    power_limit_w REAL CHECK (power_limit_w > 0),
    refused       TEXT,
    PRIMARY KEY (result_id, repeat),
    CHECK ((refused IS NULL
            AND source IS NOT NULL AND joules IS NOT NULL AND steps IS NOT NULL
            AND window_ms IS NOT NULL)
        OR (refused IS NOT NULL
            AND source IS NULL AND joules IS NULL AND steps IS NULL AND window_ms IS NULL))
) STRICT, WITHOUT ROWID;

CREATE TRIGGER result_energy_append_only_update BEFORE UPDATE ON result_energy
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER result_energy_append_only_delete BEFORE DELETE ON result_energy
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
