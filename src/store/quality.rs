//! The accuracy guard's answers (`result_quality`): each quality metric a result's harness
//! scored, and a speculative case's drafted and accepted tokens (`result_speculation`), written
//! in the run's transaction and read back for the baseline a later night is judged against.
//! Reads and writes the store.

use super::db::Store;
use super::error::StoreError;
use super::sql::{self, Transaction, params};
use crate::compare::quality::{QualityCount, QualityCounts};
use crate::compare::speculation::DraftCounts;

/// Result `result_id`'s quality metrics, in the run's transaction.
pub(crate) fn write(
    tx: &Transaction<'_>,
    result_id: i64,
    quality: &QualityCounts,
) -> sql::Result<()> {
    for (metric, c) in quality {
        tx.execute(
            "INSERT INTO result_quality (result_id, metric, correct, total)
             VALUES (?1, ?2, ?3, ?4)",
            params![
                result_id,
                metric,
                i64::try_from(c.correct).unwrap_or(i64::MAX),
                i64::try_from(c.total).unwrap_or(i64::MAX),
            ],
        )?;
    }
    Ok(())
}

/// Result `result_id`'s drafted and accepted tokens (speculative decoding), in the run's
/// transaction; nothing for a case that drafted none.
pub(crate) fn write_speculation(
    tx: &Transaction<'_>,
    result_id: i64,
    counts: Option<DraftCounts>,
) -> sql::Result<()> {
    let Some(c) = counts else {
        return Ok(());
    };
    tx.execute(
        "INSERT INTO result_speculation (result_id, drafted, accepted) VALUES (?1, ?2, ?3)",
        params![
            result_id,
            i64::try_from(c.drafted).unwrap_or(i64::MAX),
            i64::try_from(c.accepted).unwrap_or(i64::MAX),
        ],
    )?;
    Ok(())
}

impl Store {
    /// The drafted and accepted tokens of result `result_id` (speculative decoding); `None`
    /// when it drafted none.
    pub fn result_speculation(&self, result_id: i64) -> Result<Option<DraftCounts>, StoreError> {
        let row: Option<(i64, i64)> = self
            .conn
            .prepare_cached("SELECT drafted, accepted FROM result_speculation WHERE result_id = ?1")
            .and_then(|mut stmt| {
                stmt.query_map([result_id], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .next()
                    .transpose()
            })
            .map_err(self.fail("read a result's drafted tokens"))?;
        // The table's checks keep both counts whole, non-negative and accepted <= drafted.
        Ok(row.map(|(drafted, accepted)| DraftCounts {
            drafted: u64::try_from(drafted).unwrap_or(0),
            accepted: u64::try_from(accepted).unwrap_or(0),
        }))
    }

    /// The quality metrics result `result_id`'s harness scored; empty when it scored none.
    pub fn result_quality(&self, result_id: i64) -> Result<QualityCounts, StoreError> {
        let rows: Vec<(String, i64, i64)> = self
            .conn
            .prepare_cached(
                "SELECT metric, correct, total FROM result_quality WHERE result_id = ?1",
            )
            .and_then(|mut stmt| {
                stmt.query_map([result_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect::<sql::Result<Vec<_>>>()
            })
            .map_err(self.fail("read a result's quality metrics"))?;
        // The table's checks keep both counts whole and non-negative.
        Ok(rows
            .into_iter()
            .map(|(metric, correct, total)| {
                let count = QualityCount {
                    correct: u64::try_from(correct).unwrap_or(0),
                    total: u64::try_from(total).unwrap_or(0),
                };
                (metric, count)
            })
            .collect())
    }
}
