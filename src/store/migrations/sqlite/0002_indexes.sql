-- Indexes for the read paths (newest runs, a case's baseline and history, a run's verdict
-- counts) and the view of current pointers.
CREATE INDEX runs_by_time ON runs (started_at_ns, id);
CREATE INDEX runs_by_branch ON runs (branch, started_at_ns, id);
CREATE INDEX results_by_run_verdict ON results (run_id, verdict);
CREATE INDEX results_by_series_time ON results (series_id, run_started_at_ns, id);
CREATE INDEX baseline_moves_by_series ON baseline_moves (series_id, id);

CREATE VIEW current_baselines AS
    SELECT m.*
    FROM series s
    JOIN baseline_moves m
      ON m.id = (SELECT max(id) FROM baseline_moves WHERE series_id = s.id);
