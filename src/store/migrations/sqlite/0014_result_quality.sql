-- The accuracy guard's answers: each quality metric a harness scored beside its steps
-- (`{"quality": {"gsm8k": {"correct": 412, "total": 500}}}`), every repeat's answers added, one
-- row per result and metric. The judgement against the baseline's rides in the result's
-- decision (`decision_json`, "quality").
CREATE TABLE result_quality (
    result_id INTEGER NOT NULL REFERENCES results (id),
    metric    TEXT NOT NULL,
    correct   INTEGER NOT NULL CHECK (correct >= 0),
    total     INTEGER NOT NULL CHECK (total > 0 AND correct <= total),
    PRIMARY KEY (result_id, metric)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER result_quality_append_only_update BEFORE UPDATE ON result_quality
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER result_quality_append_only_delete BEFORE DELETE ON result_quality
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
