//! The cases the store holds history for (one `series` row per case key and GPU SKU), for
//! commands that walk every case's history (`utilgate changes`). I/O on the store's connection.

use super::db::{Store, i64_to_u64, parse_text};
use super::error::StoreError;
use crate::case::CaseKey;

impl Store {
    /// Every case key and GPU SKU with a stored result, in key order.
    pub fn series(&self) -> Result<Vec<(CaseKey, String)>, StoreError> {
        let action = "list the stored cases";
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, suite, model, precision, phase, batch, context, gpu_sku, axes, tp, ep
                 FROM series
                 ORDER BY suite, model, precision, phase, batch, context, axes, tp, ep, gpu_sku",
            )
            .map_err(self.fail(action))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>("id")?,
                    r.get::<_, String>("suite")?,
                    r.get::<_, String>("model")?,
                    r.get::<_, String>("precision")?,
                    r.get::<_, String>("phase")?,
                    r.get::<_, i64>("batch")?,
                    r.get::<_, i64>("context")?,
                    r.get::<_, String>("gpu_sku")?,
                    r.get::<_, String>("axes")?,
                    (r.get::<_, i64>("tp")?, r.get::<_, i64>("ep")?),
                ))
            })
            .and_then(Iterator::collect::<super::sql::Result<Vec<_>>>)
            .map_err(self.fail(action))?;
        rows.into_iter()
            .map(
                |(id, suite, model, precision, phase, batch, context, sku, axes, (tp, ep))| {
                    Ok((
                        CaseKey {
                            suite,
                            model,
                            precision,
                            phase: parse_text(&self.path, "phase", id, &phase)?,
                            batch: i64_to_u64(&self.path, "batch", id, batch)?,
                            context: i64_to_u64(&self.path, "context", id, context)?,
                            axes: parse_text(&self.path, "axes", id, &axes)?,
                            tp: i64_to_u64(&self.path, "tp", id, tp)?,
                            ep: i64_to_u64(&self.path, "ep", id, ep)?,
                        },
                        sku,
                    ))
                },
            )
            .collect()
    }
}
