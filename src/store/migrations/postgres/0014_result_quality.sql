-- The accuracy guard's answers (sqlite/0014_result_quality.sql says what they are).
CREATE TABLE result_quality (
    result_id BIGINT NOT NULL REFERENCES results (id),
    metric    TEXT NOT NULL,
    correct   BIGINT NOT NULL CHECK (correct >= 0),
    total     BIGINT NOT NULL CHECK (total > 0 AND correct <= total),
    PRIMARY KEY (result_id, metric)
);

CREATE TRIGGER result_quality_append_only_update BEFORE UPDATE ON result_quality FOR EACH ROW EXECUTE FUNCTION utilgate_append_only('results are append-only');
CREATE TRIGGER result_quality_append_only_delete BEFORE DELETE ON result_quality FOR EACH ROW EXECUTE FUNCTION utilgate_append_only('results are append-only');
