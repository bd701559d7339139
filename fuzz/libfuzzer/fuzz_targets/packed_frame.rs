//! libFuzzer target `packed-frame` (see `sluice_fuzz::targets`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_fuzz::run("packed-frame", data));
