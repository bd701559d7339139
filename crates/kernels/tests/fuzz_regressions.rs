//! Inputs the fuzz harness (`fuzz/`, issue 17) found to crash a parser of this crate, each run
//! through the parser's entry point: it must return an error, not panic.

use sluice_kernels::npy;

/// A version-1 `.npy` whose header length field (1) is shorter than the 12 bytes read ahead:
/// the count of header bytes still to read underflowed (`start + len - prefix.len()`, npy.rs)
/// and panicked in debug builds. Found by `sluice-fuzz npy`.
#[test]
fn npy_header_shorter_than_the_read_ahead_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("short.npy");
    std::fs::write(&path, b"\x93NUMPY\x01\x00\x01\x00{}").unwrap();
    let err = npy::read_header(&path).unwrap_err();
    assert!(err.to_string().contains("short.npy"), "{err}");
}
