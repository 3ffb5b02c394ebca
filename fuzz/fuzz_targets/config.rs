//! Fuzz target: the config parser and validator (`config::parse`, `config::validate`) on
//! arbitrary text. Any input yields a config or an error naming a key, never a panic.
#![no_main]

use std::collections::BTreeSet;
use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(config) = utilgate::config::parse(text, Path::new("fuzz.toml")) {
        let known: BTreeSet<String> = config.models.keys().cloned().collect();
        let ctx = utilgate::config::ValidationContext {
            known_models: &known,
        };
        let _ = utilgate::config::validate(&config, &ctx);
    }
});
