//! Hands the linker `lpf.map` for the cdylib, so that `libsluice_lpf.so` exports LPF's names and
//! nothing else (issue 6: `nm -D` shows exactly the LPF names).

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rerun-if-changed=lpf.map");
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={dir}/lpf.map");
    }
}
