//! Achievable peaks measured by `utilgate probe` (DESIGN.md §2: shown beside the datasheet
//! figures, never instead), stored per GPU SKU. Does I/O on the store.

use super::sql::params;
use jiff::Timestamp;

use super::db::{Store, ns_to_timestamp, parse_json, timestamp_to_ns};
use super::error::StoreError;

/// One measured figure to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewProbe {
    pub gpu_sku: String,
    pub measured_at: Timestamp,
    /// What was measured, e.g. `copy_bytes_per_s` or `gemm_bf16_flops_per_s`.
    pub kind: String,
    pub value: f64,
    /// The measurement's details (sizes, repeats, device fingerprint).
    pub json: Option<serde_json::Value>,
}

/// A stored figure.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredProbe {
    pub id: i64,
    pub gpu_sku: String,
    pub measured_at: Timestamp,
    pub kind: String,
    pub value: f64,
    pub json: Option<serde_json::Value>,
}

impl Store {
    /// Append one measured figure.
    pub fn insert_probe(&mut self, probe: &NewProbe) -> Result<i64, StoreError> {
        let at = timestamp_to_ns(&self.path, probe.measured_at)?;
        let json = probe.json.as_ref().map(serde_json::Value::to_string);
        self.conn
            .execute(
                "INSERT INTO probes (gpu_sku, measured_at_ns, kind, value, json) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![probe.gpu_sku, at, probe.kind, probe.value, json],
            )
            .map_err(self.fail("store a probe"))?;
        self.conn
            .last_insert_rowid()
            .map_err(self.fail("record a probe"))
    }

    /// The latest figure of each kind for one GPU SKU, ordered by kind.
    pub fn latest_probes(&self, gpu_sku: &str) -> Result<Vec<StoredProbe>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT p.id, p.gpu_sku, p.measured_at_ns, p.kind, p.value, p.json FROM probes p \
                 WHERE p.gpu_sku = ?1 AND p.id = (SELECT q.id FROM probes q \
                   WHERE q.gpu_sku = p.gpu_sku AND q.kind = p.kind \
                   ORDER BY q.measured_at_ns DESC, q.id DESC LIMIT 1) \
                 ORDER BY p.kind",
            )
            .map_err(self.fail("read probes"))?;
        let rows = stmt
            .query_map([gpu_sku], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, f64>(4)?,
                    r.get::<_, Option<String>>(5)?,
                ))
            })
            .map_err(self.fail("read probes"))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(self.fail("read probes"))?;
        rows.into_iter()
            .map(|(id, gpu_sku, at, kind, value, json)| {
                Ok(StoredProbe {
                    id,
                    gpu_sku,
                    measured_at: ns_to_timestamp(&self.path, "probes.measured_at_ns", id, at)?,
                    kind,
                    value,
                    json: parse_json(&self.path, "probes.json", id, json)?,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn probe(sku: &str, kind: &str, at_s: i64, value: f64) -> NewProbe {
        NewProbe {
            gpu_sku: sku.into(),
            measured_at: Timestamp::from_second(1_790_000_000 + at_s).expect("time"),
            kind: kind.into(),
            value,
            json: Some(serde_json::json!({"bytes": 4_294_967_296_u64})),
        }
    }

    #[test]
    fn latest_probe_of_each_kind_per_sku() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store =
            Store::open(&dir.path().join("s.db"), Duration::from_secs(1)).expect("open");
        assert!(store.latest_probes("h100-sxm").expect("empty").is_empty());
        store
            .insert_probe(&probe("h100-sxm", "copy_bytes_per_s", 0, 2.9e12))
            .expect("insert");
        store
            .insert_probe(&probe("h100-sxm", "copy_bytes_per_s", 60, 3.0e12))
            .expect("insert");
        store
            .insert_probe(&probe("h100-sxm", "gemm_bf16_flops_per_s", 30, 7.1e14))
            .expect("insert");
        store
            .insert_probe(&probe("a100-sxm-80gb", "copy_bytes_per_s", 90, 1.7e12))
            .expect("insert");
        let latest = store.latest_probes("h100-sxm").expect("read");
        let got: Vec<(&str, f64)> = latest.iter().map(|p| (p.kind.as_str(), p.value)).collect();
        assert_eq!(
            got,
            [
                ("copy_bytes_per_s", 3.0e12),
                ("gemm_bf16_flops_per_s", 7.1e14)
            ]
        );
        assert_eq!(
            latest[0].json.as_ref().and_then(|j| j["bytes"].as_u64()),
            Some(4_294_967_296)
        );
        assert_eq!(
            latest[0].measured_at,
            Timestamp::from_second(1_790_000_060).expect("time")
        );
    }
}
