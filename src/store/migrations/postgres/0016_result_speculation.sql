-- Speculative decoding's counts (sqlite/0016_result_speculation.sql says what they are).
CREATE TABLE result_speculation (
    result_id BIGINT PRIMARY KEY REFERENCES results (id),
    drafted   BIGINT NOT NULL CHECK (drafted >= 0),
    accepted  BIGINT NOT NULL CHECK (accepted >= 0 AND accepted <= drafted)
);

CREATE TRIGGER result_speculation_append_only_update BEFORE UPDATE ON result_speculation FOR EACH ROW EXECUTE FUNCTION utilgate_append_only('results are append-only');
CREATE TRIGGER result_speculation_append_only_delete BEFORE DELETE ON result_speculation FOR EACH ROW EXECUTE FUNCTION utilgate_append_only('results are append-only');
