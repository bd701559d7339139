//! Import budgets (issue 17, defects 10 and 11): sizes read from a file are checked against
//! `--memory` before anything is allocated, and the vertex set of an import stays inside the
//! budget. The peak RSS checked is the largest of every run's own peak, each read with GNU time
//! (`sluice_testkit::output_with_peak_rss`).

use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};

use sluice_testkit::{assert_error, output_text, output_with_peak_rss};

fn sluice(args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
    cmd.args(args);
    let (out, rss) = output_with_peak_rss(&cmd);
    PEAK.fetch_max(rss, Ordering::Relaxed);
    out
}

/// The largest peak RSS in bytes of any run so far, each its own (read with GNU time).
static PEAK: AtomicU64 = AtomicU64::new(0);

fn children_peak_rss() -> u64 {
    PEAK.load(Ordering::Relaxed)
}

fn mtx(dir: &Path, name: &str, size_line: &str) -> String {
    let path = dir.join(name);
    let text = format!("%%MatrixMarket matrix coordinate pattern general\n{size_line}\n1 2\n");
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

/// Entries of `dir` whose names start with a dot: the import's staging and scratch directories.
fn leftovers(dir: &Path) -> Vec<String> {
    let names = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name());
    names.map(|n| n.to_string_lossy().into_owned()).filter(|n| n.starts_with('.')).collect()
}

#[test]
fn import_sizes_are_checked_against_the_budget_before_allocation() {
    const BUDGET: u64 = 256 << 20;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Dimensions no store can hold: an error naming the file, not a panic (101) or abort (134).
    for (name, size) in [
        ("max.mtx", "18446744073709551615 18446744073709551615 1"),
        ("big.mtx", "4294967296 4294967296 1"),
    ] {
        let input = mtx(d, name, size);
        let out_path = d.join(format!("{name}.grid"));
        let out = sluice(&[
            "graph",
            "import",
            "--format",
            "mtx",
            "--directed",
            "--memory",
            "256M",
            &input,
            "-o",
            out_path.to_str().unwrap(),
        ]);
        assert_error(&out, &[name]);
        assert!(!out_path.exists());
        assert_eq!(leftovers(d), Vec::<String>::new());
        assert!(children_peak_rss() <= BUDGET, "{name}: peak RSS {}", children_peak_rss());
    }
    // 2^28 vertices declared in 77 bytes: the vertex arrays alone need 4 GiB, so the import
    // must refuse (naming the memory it needs) without first allocating them.
    let input = mtx(d, "wide.mtx", "268435456 268435456 1");
    assert!(std::fs::metadata(&input).unwrap().len() < 100);
    let out_path = d.join("wide.grid");
    let out = sluice(&[
        "graph",
        "import",
        "--format",
        "mtx",
        "--directed",
        "--memory",
        "256M",
        &input,
        "-o",
        out_path.to_str().unwrap(),
    ]);
    assert_error(&out, &["wide.mtx", "memory"]);
    assert_eq!(leftovers(d), Vec::<String>::new());
    let peak = children_peak_rss();
    assert!(peak <= BUDGET, "2^28 vertices: peak RSS {peak}: {}", output_text(&out));
}
