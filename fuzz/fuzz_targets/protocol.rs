//! Fuzz target: the harness protocol v1 parser (`measure::protocol::parse`) on arbitrary text.
//! It must return a report or a line-numbered error, never panic; a parsed report holds only
//! finite, positive step times.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(report) = utilgate::measure::protocol::parse(&text) {
        assert!(
            report
                .steps_ms
                .iter()
                .chain(&report.warmup_ms)
                .all(|x| x.is_finite() && *x > 0.0)
        );
    }
});
