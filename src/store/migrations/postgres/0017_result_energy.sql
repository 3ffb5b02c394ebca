-- Energy per token (sqlite/0017_result_energy.sql says what the rows are).
CREATE TABLE result_energy (
    result_id     BIGINT NOT NULL REFERENCES results (id),
    repeat        BIGINT NOT NULL CHECK (repeat >= 0),
    source        TEXT CHECK (source IN ('counter', 'integral')),
    joules        DOUBLE PRECISION CHECK (joules > 0),
    steps         BIGINT CHECK (steps > 0),
    window_ms     DOUBLE PRECISION CHECK (window_ms > 0),
    power_limit_w DOUBLE PRECISION CHECK (power_limit_w > 0),
    refused       TEXT,
    PRIMARY KEY (result_id, repeat),
    CHECK ((refused IS NULL
            AND source IS NOT NULL AND joules IS NOT NULL AND steps IS NOT NULL
            AND window_ms IS NOT NULL)
        OR (refused IS NOT NULL
            AND source IS NULL AND joules IS NULL AND steps IS NULL AND window_ms IS NULL))
);

CREATE TRIGGER result_energy_append_only_update BEFORE UPDATE ON result_energy FOR EACH ROW EXECUTE FUNCTION utilgate_append_only('results are append-only');
CREATE TRIGGER result_energy_append_only_delete BEFORE DELETE ON result_energy FOR EACH ROW EXECUTE FUNCTION utilgate_append_only('results are append-only');
