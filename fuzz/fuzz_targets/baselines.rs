//! Fuzz target: the reviewed baselines export file parser (`baseline import`'s reader) on
//! arbitrary text: an error naming the file, never a panic.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = utilgate::store::export::parse_export(text, Path::new("baselines/fuzz.json"));
});
