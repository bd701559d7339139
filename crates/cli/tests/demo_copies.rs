//! The demo's copy counters are a function of its input and settings (issue 16 item 6): the
//! grep step's user-copy figure once read 77696, 65536 and 65280 B in three identical runs.

use std::process::Command;

/// The demo's `copies:` lines, in order, from one run in a fresh directory.
fn copy_lines() -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join("demo");
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["demo", "--size", "8M", "--scale", "10", "--dir", &keep.to_string_lossy()])
        .output()
        .expect("run sluice");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<String> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("copies: seam"))
        .map(str::to_owned)
        .collect();
    assert!(lines.len() >= 4, "{text}");
    lines
}

#[test]
fn the_demo_prints_the_same_copy_counters_in_identical_runs() {
    let first = copy_lines();
    for run in 1..3 {
        assert_eq!(copy_lines(), first, "run {run}");
    }
}
