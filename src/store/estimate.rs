//! What the store's history says a suite's cases cost, for the estimate `utilgate run` prints
//! before it starts. Reads the store.

use super::sql::OptionalExtension;

use super::db::Store;
use super::error::StoreError;

impl Store {
    /// Wall seconds per case of the last run that measured `suite` here (the run's whole
    /// duration over all its cases), or `None` when no run did. Imported runs (baselines
    /// measured elsewhere, stored with no duration) time nothing and are skipped. Walks the runs newest first to the last
    /// one with a result of the suite (the newest, for a suite that runs every night), never
    /// every result the suite ever stored.
    pub fn suite_seconds_per_case(&self, suite: &str) -> Result<Option<f64>, StoreError> {
        let row: Option<(i64, i64, i64)> = self
            .conn
            .query_row(
                "SELECT r.started_at_ns, r.finished_at_ns, \
                        (SELECT count(*) FROM results a WHERE a.run_id = r.id) \
                 FROM runs r \
                 WHERE r.id = (SELECT u.id FROM runs u \
                               WHERE u.finished_at_ns > u.started_at_ns \
                                 AND EXISTS (SELECT 1 FROM results x \
                                             JOIN series s ON s.id = x.series_id \
                                             WHERE x.run_id = u.id AND s.suite = ?1) \
                               ORDER BY u.id DESC LIMIT 1)",
                [suite],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(self.fail("read the last run of a suite"))?;
        Ok(row.and_then(|(start, end, cases)| {
            (cases > 0 && end >= start).then(|| (end - start) as f64 / 1e9 / cases as f64)
        }))
    }
}
