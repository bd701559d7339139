//! libFuzzer target `store-meta` (see `sluice_fuzz::targets`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_fuzz::run("store-meta", data));
