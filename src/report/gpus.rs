//! The `utilgate gpus` listing: the built-in GPU catalogue with the datasheet figures the floor
//! uses. Pure: the command prints it.

use serde::Serialize;

use crate::catalog::GpuSpec;
use crate::report::format::{MISSING, fixed};
use crate::report::terminal::{Grid, GridCell};

/// The JSON schema version of `utilgate gpus --format json`.
pub const SCHEMA_VERSION: u32 = 1;

/// The catalogue as JSON: every entry with its figures in SI units.
#[derive(Debug, Serialize)]
pub struct GpuList<'a> {
    pub schema_version: u32,
    pub gpus: &'a [GpuSpec],
}

fn tflops(x: Option<f64>) -> String {
    x.map_or_else(|| MISSING.to_owned(), |v| fixed(v / 1e12, 1))
}

/// The terminal table: one row per entry, figures as on the datasheet (dense, never sparse).
#[must_use]
pub fn render_human(gpus: &[GpuSpec], width: Option<u16>) -> String {
    let mut table = Grid::new(
        crate::report::Terminal {
            color: false,
            width,
        },
        [
            "name",
            "GPU",
            "memory GB",
            "HBM GB/s",
            "bf16 TF",
            "fp8 TF",
            "fp4 TF",
            "int8 TOP",
            "fp32 TF",
        ],
    );
    for g in gpus {
        table.row(vec![
            GridCell::left(&g.name),
            GridCell::left(&g.display_name),
            GridCell::right(
                g.memory_bytes
                    .map_or_else(|| MISSING.to_owned(), |b| fixed(b / 1e9, 0)),
            ),
            GridCell::right(fixed(g.mem_bandwidth_bytes_per_s / 1e9, 0)),
            GridCell::right(tflops(g.dense_flops.bf16)),
            GridCell::right(tflops(g.dense_flops.fp8)),
            GridCell::right(tflops(g.dense_flops.fp4)),
            GridCell::right(tflops(g.dense_flops.int8)),
            GridCell::right(tflops(g.dense_flops.fp32)),
        ]);
    }
    format!(
        "{}\ndense datasheet peaks (TF: TFLOP/s); `utilgate floor --gpu NAME` uses them; \
         `[gpu]` in the config can declare or override any of them\n",
        table.render()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::gpu::catalogue;

    #[test]
    fn every_catalogue_entry_is_listed_with_its_figures() {
        let gpus = catalogue();
        let text = render_human(&gpus, None);
        for g in &gpus {
            assert!(text.contains(&g.name), "{} missing:\n{text}", g.name);
        }
        // H100 SXM: 3350 GB/s, 989.4 dense bf16 TFLOP/s (the whitepaper's figures).
        let h100 = text
            .lines()
            .find(|l| l.contains("h100-sxm"))
            .expect("h100-sxm row");
        assert!(h100.contains("3350") && h100.contains("989.4"), "{h100}");
        // B200: FP4 18 PF sparse per GPU, 9000 TFLOP/s dense in the fp4 column.
        let b200 = text
            .lines()
            .find(|l| l.contains("b200") && !l.contains("gb200"))
            .expect("b200 row");
        assert!(b200.contains("9000.0"), "{b200}");
        let json = serde_json::to_value(GpuList {
            schema_version: SCHEMA_VERSION,
            gpus: &gpus,
        })
        .expect("json");
        assert_eq!(json["gpus"].as_array().map(Vec::len), Some(gpus.len()));
    }
}
