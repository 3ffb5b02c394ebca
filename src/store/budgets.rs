//! A budgeted night's records as the store keeps them (migration 0012): the night's in
//! `run_budgets` (its unstarted cases in `run_budget_unstarted`), each case's in
//! `result_budgets`, each repeat's cost in `result_repeat_costs`. Written in the run's
//! transaction, read back as `compare::budget`'s types. Does I/O on the store.

use std::path::Path;

use super::db::{Store, i64_to_u64};
use super::error::StoreError;
use super::sql::{self, Row, Transaction, params};
use crate::compare::budget::{CaseRecord, NightRecord, PlanNote, RepeatCost, Stop};

/// A `result_budgets` row as `results.rs` joins it (`budget_*` columns, NULL where the result
/// has none), before the checks that need the store's path.
pub(crate) struct RawCaseRecord {
    note: Option<String>,
    planned_repeats: Option<u32>,
    steps: Option<i64>,
    first_repeats: Option<u32>,
    confirm_repeats: Option<u32>,
    time_s: Option<f64>,
    stop: Option<String>,
    needed_repeats: Option<u32>,
    needed_s: Option<f64>,
}

impl RawCaseRecord {
    pub(crate) fn from_row(row: &Row<'_>) -> sql::Result<RawCaseRecord> {
        Ok(RawCaseRecord {
            note: row.get("budget_note")?,
            planned_repeats: row.get("budget_planned_repeats")?,
            steps: row.get("budget_steps")?,
            first_repeats: row.get("budget_first_repeats")?,
            confirm_repeats: row.get("budget_confirm_repeats")?,
            time_s: row.get("budget_time_s")?,
            stop: row.get("budget_stop")?,
            needed_repeats: row.get("budget_needed_repeats")?,
            needed_s: row.get("budget_needed_s")?,
        })
    }

    /// The record of result `id`, `None` where its result has none (the columns are NOT NULL
    /// in `result_budgets`, so a NULL note means no row).
    pub(crate) fn decode(self, path: &Path, id: i64) -> Result<Option<CaseRecord>, StoreError> {
        let Some(note) = self.note else {
            return Ok(None);
        };
        let bad = |column: &'static str, detail: String| StoreError::BadValue {
            path: path.to_owned(),
            column,
            row: id,
            detail,
        };
        let missing = |column: &'static str| bad(column, "NULL in a NOT NULL column".into());
        let note = PlanNote::ALL
            .into_iter()
            .find(|n| n.as_str() == note)
            .ok_or_else(|| bad("result_budgets.note", format!("unknown note {note:?}")))?;
        let stop = self.stop.ok_or_else(|| missing("result_budgets.stop"))?;
        let stop = Stop::ALL
            .into_iter()
            .find(|s| s.as_str() == stop)
            .ok_or_else(|| bad("result_budgets.stop", format!("unknown stop {stop:?}")))?;
        let steps = self.steps.ok_or_else(|| missing("result_budgets.steps"))?;
        Ok(Some(CaseRecord {
            note,
            planned_repeats: self
                .planned_repeats
                .ok_or_else(|| missing("result_budgets.planned_repeats"))?,
            steps: i64_to_u64(path, "result_budgets.steps", id, steps)?,
            first_repeats: self
                .first_repeats
                .ok_or_else(|| missing("result_budgets.first_repeats"))?,
            confirm_repeats: self
                .confirm_repeats
                .ok_or_else(|| missing("result_budgets.confirm_repeats"))?,
            time_s: self
                .time_s
                .ok_or_else(|| missing("result_budgets.time_s"))?,
            stop,
            needed_repeats: self.needed_repeats,
            needed_s: self.needed_s,
        }))
    }
}

fn finite(v: Option<f64>) -> Option<f64> {
    v.filter(|x| x.is_finite())
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The night's record of run `run_id`, in the run's transaction.
pub(crate) fn write_night(
    tx: &Transaction<'_>,
    run_id: i64,
    night: &NightRecord,
) -> sql::Result<()> {
    tx.execute(
        "INSERT INTO run_budgets (run_id, budget_s, grace_s, planned_s, reserve_s,
                                  budget_to_resolve_all_s, used_s, stopped)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            run_id,
            night.budget_s,
            night.grace_s,
            night.planned_s,
            night.reserve_s,
            finite(night.budget_to_resolve_all_s),
            night.used_s,
            i64::from(night.stopped),
        ],
    )?;
    for (i, case) in night.not_started.iter().enumerate() {
        tx.execute(
            "INSERT INTO run_budget_unstarted (run_id, ordinal, case_key) VALUES (?1, ?2, ?3)",
            params![run_id, i64::try_from(i).unwrap_or(i64::MAX), case],
        )?;
    }
    Ok(())
}

/// Result `result_id`'s budget record and repeat costs, in the run's transaction.
pub(crate) fn write_case(
    tx: &Transaction<'_>,
    result_id: i64,
    record: Option<&CaseRecord>,
    costs: &[RepeatCost],
) -> sql::Result<()> {
    if let Some(r) = record {
        tx.execute(
            "INSERT INTO result_budgets (result_id, note, planned_repeats, steps, first_repeats,
                                         confirm_repeats, time_s, stop, needed_repeats, needed_s)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                result_id,
                r.note.as_str(),
                r.planned_repeats,
                count(r.steps),
                r.first_repeats,
                r.confirm_repeats,
                r.time_s,
                r.stop.as_str(),
                r.needed_repeats,
                finite(r.needed_s),
            ],
        )?;
    }
    for (i, c) in costs.iter().enumerate() {
        tx.execute(
            "INSERT INTO result_repeat_costs (result_id, repeat, wall_s, steps_s, steps,
                                              warmup_s, warmup_steps)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                result_id,
                i64::try_from(i).unwrap_or(i64::MAX),
                c.wall_s,
                c.steps_s,
                count(c.steps),
                c.warmup_s,
                count(c.warmup_steps),
            ],
        )?;
    }
    Ok(())
}

impl Store {
    /// The budgeted night's record of run `run_id`, `None` when it had no budget.
    pub(crate) fn budget_night(&self, run_id: i64) -> Result<Option<NightRecord>, StoreError> {
        let row = self
            .conn
            .prepare_cached(
                "SELECT budget_s, grace_s, planned_s, reserve_s, budget_to_resolve_all_s, used_s,
                        stopped
                 FROM run_budgets WHERE run_id = ?1",
            )
            .and_then(|mut stmt| {
                stmt.query_map([run_id], |r| {
                    Ok((
                        [r.get::<_, f64>(0)?, r.get(1)?, r.get(2)?, r.get(3)?],
                        r.get::<_, Option<f64>>(4)?,
                        r.get::<_, f64>(5)?,
                        r.get::<_, bool>(6)?,
                    ))
                })?
                .next()
                .transpose()
            })
            .map_err(self.fail("read a run's budget"))?;
        let Some(([budget_s, grace_s, planned_s, reserve_s], to_resolve, used_s, stopped)) = row
        else {
            return Ok(None);
        };
        let not_started = self
            .conn
            .prepare_cached(
                "SELECT case_key FROM run_budget_unstarted WHERE run_id = ?1 ORDER BY ordinal",
            )
            .and_then(|mut stmt| {
                stmt.query_map([run_id], |r| r.get(0))?
                    .collect::<sql::Result<Vec<String>>>()
            })
            .map_err(self.fail("read a run's unstarted cases"))?;
        Ok(Some(NightRecord {
            budget_s,
            grace_s,
            planned_s,
            reserve_s,
            budget_to_resolve_all_s: to_resolve,
            not_started,
            used_s,
            stopped,
        }))
    }

    /// The recorded cost of each repeat of result `result_id`, in repeat order (none for a
    /// result stored before costs were recorded).
    pub fn repeat_costs(&self, result_id: i64) -> Result<Vec<RepeatCost>, StoreError> {
        let rows = self
            .conn
            .prepare_cached(
                "SELECT wall_s, steps_s, steps, warmup_s, warmup_steps
                 FROM result_repeat_costs WHERE result_id = ?1 ORDER BY repeat",
            )
            .and_then(|mut stmt| {
                stmt.query_map([result_id], |r| {
                    Ok((
                        r.get::<_, f64>(0)?,
                        r.get::<_, f64>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, f64>(3)?,
                        r.get::<_, i64>(4)?,
                    ))
                })?
                .collect::<sql::Result<Vec<_>>>()
            })
            .map_err(self.fail("read a result's repeat costs"))?;
        rows.into_iter()
            .map(|(wall_s, steps_s, steps, warmup_s, warmup_steps)| {
                Ok(RepeatCost {
                    wall_s,
                    steps_s,
                    steps: i64_to_u64(&self.path, "result_repeat_costs.steps", result_id, steps)?,
                    warmup_s,
                    warmup_steps: i64_to_u64(
                        &self.path,
                        "result_repeat_costs.warmup_steps",
                        result_id,
                        warmup_steps,
                    )?,
                })
            })
            .collect()
    }
}
