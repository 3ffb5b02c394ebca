-- Speculative decoding's counts: the tokens a case's draft proposed over its counted rounds and
-- how many of them the target accepted (`{"speculative": {"drafted": D, "accepted": A}}`),
-- every repeat's added, one row per result that drafted any. The judgement against the
-- baseline's rides in the result's decision (`decision_json`, "acceptance").
CREATE TABLE result_speculation (
    result_id INTEGER PRIMARY KEY NOT NULL REFERENCES results (id),
    drafted   INTEGER NOT NULL CHECK (drafted >= 0),
    accepted  INTEGER NOT NULL CHECK (accepted >= 0 AND accepted <= drafted)
) STRICT;

CREATE TRIGGER result_speculation_append_only_update BEFORE UPDATE ON result_speculation
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER result_speculation_append_only_delete BEFORE DELETE ON result_speculation
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
