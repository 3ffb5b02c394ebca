//! Energy per token's records (`result_energy`, #33 item 4): each timed repeat's joules over
//! its timed window, or why it has none, written in the run's transaction and read back for
//! the baseline a later night is judged against and for the reports. Reads and writes the
//! store.

use super::db::Store;
use super::error::StoreError;
use super::sql::{self, Transaction, params};
use crate::compare::energy::{EnergySource, EnergyWindow, RepeatEnergy};

/// Result `result_id`'s energy records, in the run's transaction.
pub(crate) fn write(
    tx: &Transaction<'_>,
    result_id: i64,
    energy: &[RepeatEnergy],
) -> sql::Result<()> {
    for r in energy {
        let (source, joules, steps, window_ms, limit, refused) = match &r.measured {
            Ok(w) => (
                Some(w.source.as_str()),
                Some(w.joules),
                Some(i64::try_from(w.steps).unwrap_or(i64::MAX)),
                Some(w.window_ms),
                w.power_limit_w,
                None,
            ),
            Err(why) => (None, None, None, None, None, Some(why.as_str())),
        };
        tx.execute(
            "INSERT INTO result_energy
                 (result_id, repeat, source, joules, steps, window_ms, power_limit_w, refused)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                result_id,
                i64::from(r.repeat),
                source,
                joules,
                steps,
                window_ms,
                limit.filter(|w| w.is_finite() && *w > 0.0),
                refused,
            ],
        )?;
    }
    Ok(())
}

/// One stored row, as read.
struct Row {
    repeat: i64,
    source: Option<String>,
    joules: Option<f64>,
    steps: Option<i64>,
    window_ms: Option<f64>,
    power_limit_w: Option<f64>,
    refused: Option<String>,
}

impl Store {
    /// Result `result_id`'s energy records in repeat order; empty when NVML did not watch it.
    pub fn result_energy(&self, result_id: i64) -> Result<Vec<RepeatEnergy>, StoreError> {
        let rows: Vec<Row> = self
            .conn
            .prepare_cached(
                "SELECT repeat, source, joules, steps, window_ms, power_limit_w, refused
                 FROM result_energy WHERE result_id = ?1 ORDER BY repeat",
            )
            .and_then(|mut stmt| {
                stmt.query_map([result_id], |r| {
                    Ok(Row {
                        repeat: r.get("repeat")?,
                        source: r.get("source")?,
                        joules: r.get("joules")?,
                        steps: r.get("steps")?,
                        window_ms: r.get("window_ms")?,
                        power_limit_w: r.get("power_limit_w")?,
                        refused: r.get("refused")?,
                    })
                })?
                .collect::<sql::Result<Vec<_>>>()
            })
            .map_err(self.fail("read a result's energy records"))?;
        // The table's checks keep a row either measured (source, joules, steps, window) or
        // refused (a reason alone), with whole non-negative counts.
        Ok(rows
            .into_iter()
            .map(|row| {
                let measured = match (
                    row.source.as_deref().and_then(EnergySource::from_name),
                    row.joules,
                    row.steps.and_then(|s| u64::try_from(s).ok()),
                    row.window_ms,
                ) {
                    (Some(source), Some(joules), Some(steps), Some(window_ms)) => {
                        Ok(EnergyWindow {
                            joules,
                            steps,
                            window_ms,
                            source,
                            power_limit_w: row.power_limit_w,
                        })
                    }
                    _ => Err(row
                        .refused
                        .unwrap_or_else(|| "no energy figure was stored".to_owned())),
                };
                RepeatEnergy {
                    repeat: u32::try_from(row.repeat).unwrap_or(u32::MAX),
                    measured,
                }
            })
            .collect())
    }
}
