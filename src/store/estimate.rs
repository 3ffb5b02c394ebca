//! What the store's history says a suite's cases cost, for the estimate `utilgate run` prints
//! before it starts. Reads the store.

use super::sql::OptionalExtension;

use super::db::Store;
use super::error::StoreError;

impl Store {
    /// The last run that measured `suite` here and timed itself (imported runs, stored with no
    /// duration, time nothing), as (id, started, finished) in ns; with `with_costs`, the last
    /// one that also recorded its processes' walls. Reads one row.
    fn last_timed_run(
        &self,
        suite: &str,
        with_costs: bool,
    ) -> Result<Option<(i64, i64, i64)>, StoreError> {
        let costs = if with_costs {
            "JOIN result_repeat_costs c ON c.result_id = x.id "
        } else {
            ""
        };
        self.conn
            .query_row(
                &format!(
                    "SELECT r.id, r.started_at_ns, r.finished_at_ns FROM runs r \
                     WHERE r.id = (SELECT u.id FROM runs u \
                                   WHERE u.finished_at_ns > u.started_at_ns \
                                     AND EXISTS (SELECT 1 FROM results x \
                                                 JOIN series s ON s.id = x.series_id {costs}\
                                                 WHERE x.run_id = u.id AND s.suite = ?1) \
                                   ORDER BY u.id DESC LIMIT 1)"
                ),
                [suite],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(self.fail("read the last run of a suite"))
    }

    /// Wall seconds per harness process of the last run that measured `suite` here: the run's
    /// whole duration over every process it started (each result's repeats, confirm steps
    /// included), or `None` when no timed run did. Reads one run's results, never the suite's
    /// history.
    pub fn suite_seconds_per_process(&self, suite: &str) -> Result<Option<f64>, StoreError> {
        let Some((id, start, end)) = self.last_timed_run(suite, false)? else {
            return Ok(None);
        };
        let blobs: Vec<Vec<u8>> = self
            .conn
            .prepare_cached("SELECT samples FROM results WHERE run_id = ?1")
            .and_then(|mut stmt| {
                stmt.query_map(super::sql::params![id], |r| r.get(0))?
                    .collect()
            })
            .map_err(self.fail("read the last run of a suite"))?;
        // A blob that does not decode counts no process: the estimate only errs long.
        let processes: usize = blobs
            .iter()
            .filter_map(|b| super::samples::repeat_count(b).ok())
            .sum();
        Ok((processes > 0 && end > start).then(|| (end - start) as f64 / 1e9 / processes as f64))
    }

    /// utilgate's own wall seconds per harness process in the last run that measured `suite`
    /// here: the run's duration less the time its harness processes ran (their recorded walls),
    /// over those processes; what judging, storing, starting each process and the run's own
    /// start and report add beside the harness. `None` when no timed run recorded its
    /// processes' walls. Reads one run's repeat costs.
    pub fn suite_runner_seconds_per_process(&self, suite: &str) -> Result<Option<f64>, StoreError> {
        let Some((id, start, end)) = self.last_timed_run(suite, true)? else {
            return Ok(None);
        };
        let (walls_s, processes): (f64, i64) = self
            .conn
            .query_row(
                "SELECT COALESCE(SUM(c.wall_s), 0.0), COUNT(*) FROM result_repeat_costs c \
                 JOIN results x ON x.id = c.result_id WHERE x.run_id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(self.fail("read the last run of a suite"))?;
        let run_s = (end - start) as f64 / 1e9;
        Ok((processes > 0 && end > start).then(|| (run_s - walls_s).max(0.0) / processes as f64))
    }
}
