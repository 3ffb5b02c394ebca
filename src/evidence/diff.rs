//! The diff of two analyses (pure): per kernel and per operator the count and time per step then
//! and now, added and removed names, category shares and GPU idle share then and now, ranked by
//! the size of the time change. Names are compared by HTA's short name (templates and arguments
//! dropped), so a kernel recompiled with other template arguments still matches itself.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::analysis::{Analysis, NameStat};
use super::classify::Category;
use super::hta::shorten_name;

/// How one name changed, per step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<Category>,
    pub count_then: f64,
    pub count_now: f64,
    pub us_then: f64,
    pub us_now: f64,
    /// Whether the times are self times (host operators: each operator's own code, see
    /// `analysis::NameStat::self_us`) rather than whole durations.
    #[serde(default)]
    pub self_time: bool,
}

impl Change {
    #[must_use]
    pub fn delta_us(&self) -> f64 {
        self.us_now - self.us_then
    }

    /// Relative change of time, when there was time before.
    #[must_use]
    pub fn delta_pct(&self) -> Option<f64> {
        (self.us_then > 0.0).then(|| 100.0 * self.delta_us() / self.us_then)
    }

    #[must_use]
    pub fn added(&self) -> bool {
        self.count_then == 0.0 && self.count_now > 0.0
    }

    #[must_use]
    pub fn removed(&self) -> bool {
        self.count_now == 0.0 && self.count_then > 0.0
    }

    /// One line: `flash_fwd_splitkv_kernel +38% (41.0 -> 56.6 µs per step; 32 -> 32 calls)`.
    #[must_use]
    pub fn line(&self) -> String {
        let what = if self.added() {
            "new".to_owned()
        } else if self.removed() {
            "gone".to_owned()
        } else {
            self.delta_pct().map_or_else(
                || format!("{:+.1} µs", self.delta_us()),
                |p| format!("{p:+.0}%"),
            )
        };
        format!(
            "{} {what} ({:.1} -> {:.1} {}µs per step; {} -> {} calls)",
            self.name,
            self.us_then,
            self.us_now,
            if self.self_time { "self " } else { "" },
            fmt_count(self.count_then),
            fmt_count(self.count_now)
        )
    }
}

fn fmt_count(c: f64) -> String {
    if (c - c.round()).abs() < 1e-9 {
        format!("{c:.0}")
    } else {
        format!("{c:.1}")
    }
}

/// Then vs now of two analyses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceDiff {
    pub wall_us_then: f64,
    pub wall_us_now: f64,
    /// Whether each trace recorded GPU work; without it the idle shares mean nothing and are
    /// not shown.
    #[serde(default = "yes")]
    pub has_gpu_then: bool,
    #[serde(default = "yes")]
    pub has_gpu_now: bool,
    pub gpu_idle_share_then: f64,
    pub gpu_idle_share_now: f64,
    pub kernels_then: f64,
    pub kernels_now: f64,
    pub syncs_then: f64,
    pub syncs_now: f64,
    /// Share of GPU time per category, then and now.
    pub categories: BTreeMap<Category, (f64, f64)>,
    /// Kernels, largest time change first.
    pub kernels: Vec<Change>,
    /// Host operators, largest change of self time first (of time, for an analysis stored
    /// before self time was measured).
    pub operators: Vec<Change>,
}

fn yes() -> bool {
    true
}

/// Per name then and now. Self times when every row of both sides has one (host operators
/// analysed since self time is measured), else whole durations, never the two mixed.
fn changes(then: &[NameStat], now: &[NameStat]) -> Vec<Change> {
    let self_time = then.iter().chain(now).all(|s| s.self_us.is_some())
        && then.iter().chain(now).next().is_some();
    let time = |s: &NameStat| {
        if self_time {
            s.self_us.unwrap_or(s.total_us)
        } else {
            s.total_us
        }
    };
    let mut map: BTreeMap<String, Change> = BTreeMap::new();
    let mut add = |s: &NameStat, is_now: bool| {
        let key = shorten_name(&s.name);
        let e = map.entry(key.clone()).or_insert_with(|| Change {
            name: key,
            category: s.category,
            count_then: 0.0,
            count_now: 0.0,
            us_then: 0.0,
            us_now: 0.0,
            self_time,
        });
        if is_now {
            e.count_now += s.count;
            e.us_now += time(s);
        } else {
            e.count_then += s.count;
            e.us_then += time(s);
        }
    };
    for s in then {
        add(s, false);
    }
    for s in now {
        add(s, true);
    }
    let mut out: Vec<Change> = map
        .into_values()
        .filter(|c| c.delta_us().abs() > 0.0 || (c.count_now - c.count_then).abs() > 0.0)
        .collect();
    out.sort_by(|a, b| {
        b.delta_us()
            .abs()
            .total_cmp(&a.delta_us().abs())
            .then_with(|| a.name.cmp(&b.name))
    });
    out
}

fn shares(a: &Analysis) -> BTreeMap<Category, f64> {
    let total: f64 = a.categories.values().sum();
    a.categories
        .iter()
        .map(|(c, t)| (*c, if total > 0.0 { t / total } else { 0.0 }))
        .collect()
}

/// The diff from `then` (the baseline's evidence) to `now`.
#[must_use]
pub fn diff(then: &Analysis, now: &Analysis) -> TraceDiff {
    let (st, sn) = (shares(then), shares(now));
    let mut categories: BTreeMap<Category, (f64, f64)> = BTreeMap::new();
    for c in st.keys().chain(sn.keys()) {
        categories.insert(
            *c,
            (
                st.get(c).copied().unwrap_or(0.0),
                sn.get(c).copied().unwrap_or(0.0),
            ),
        );
    }
    TraceDiff {
        wall_us_then: then.step.wall_us,
        wall_us_now: now.step.wall_us,
        has_gpu_then: then.has_gpu,
        has_gpu_now: now.has_gpu,
        gpu_idle_share_then: then.step.gpu_idle_share,
        gpu_idle_share_now: now.step.gpu_idle_share,
        kernels_then: then.step.kernels,
        kernels_now: now.step.kernels,
        syncs_then: then.step.syncs,
        syncs_now: now.step.syncs,
        categories,
        kernels: changes(&then.kernels, &now.kernels),
        operators: changes(&then.operators, &now.operators),
    }
}

impl TraceDiff {
    /// The headline lines, most important first: the largest kernel changes, then operators
    /// for CPU-only traces, then syncs and idle share when they moved.
    #[must_use]
    pub fn lines(&self, n: usize) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        if (self.syncs_now - self.syncs_then).abs() >= 0.5 {
            out.push(format!(
                "host sync calls per step {} -> {}",
                fmt_count(self.syncs_then),
                fmt_count(self.syncs_now)
            ));
        }
        if let Some(line) = self.gpu_presence() {
            out.push(line);
        } else if (self.gpu_idle_share_now - self.gpu_idle_share_then).abs() >= 0.02 {
            out.push(format!(
                "GPU idle {:.0}% -> {:.0}% of the step",
                100.0 * self.gpu_idle_share_then,
                100.0 * self.gpu_idle_share_now
            ));
        }
        let source = if self.kernels.is_empty() {
            &self.operators
        } else {
            &self.kernels
        };
        let mut lines: Vec<String> = source.iter().take(n).map(Change::line).collect();
        lines.append(&mut out);
        lines.truncate(n);
        lines
    }

    /// Whether either trace lacks GPU work, in words: `None` when both recorded some (then the
    /// idle shares compare). A trace without GPU work has no idle share to show.
    #[must_use]
    pub fn gpu_presence(&self) -> Option<String> {
        match (self.has_gpu_then, self.has_gpu_now) {
            (true, true) => None,
            (false, false) => Some("no GPU activity recorded in either trace".to_owned()),
            (true, false) => Some(format!(
                "no GPU activity recorded now (then {:.1} kernels per step, GPU idle {:.0}%)",
                self.kernels_then,
                100.0 * self.gpu_idle_share_then
            )),
            (false, true) => Some(format!(
                "GPU activity recorded now ({:.1} kernels per step, GPU idle {:.0}%), none then",
                self.kernels_now,
                100.0 * self.gpu_idle_share_now
            )),
        }
    }
}
