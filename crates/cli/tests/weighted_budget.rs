//! Weighted passes stay within `--memory` (issue 17, "Left": streaming `sssp` at `--memory
//! 512M` peaked at 757–810 MiB on a scale-22 store). Each weighted run — streaming `sssp`, `spmv`
//! and `sssp --in-memory` — runs at the smallest budget it accepts (found from the refusal's
//! "needs --memory NM at least"), and its own peak RSS, read with GNU time, is at most the
//! budget plus [`SLACK`]. Before: the in-memory load held the raw weight file beside the decoded
//! weights (8 bytes per edge outside the reservation), and glibc's per-thread malloc arenas kept
//! the blocks a pass freed on one thread out of reach of the others. Then (session 15): the
//! allocator's free pages between live blocks, and the partials waiting in the pipeline's
//! reorder window, were outside the reservations; streaming `sssp` at its smallest budget
//! (145 MiB then) peaked at 161-169 MiB, and the allowance was 64 MiB.

use std::path::Path;
use std::process::Command;

use sluice_testkit::{output_text, output_with_peak_rss};

/// Bytes above the budget a run may use: the resident set's peaks between two of the pipeline's
/// checks (`sluice_io::Budget::hold_resident`). Nine streaming `sssp` runs at their smallest
/// budget, 147 MiB, peaked at 139.5-149.5 MiB.
const SLACK: u64 = 8 << 20;

/// Runs sluice with `args`; returns (exit code, stdout and stderr, its own peak RSS in bytes).
fn sluice_rss(args: &[&str]) -> (Option<i32>, String, u64) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
    cmd.args(args);
    let (out, rss) = output_with_peak_rss(&cmd);
    (out.status.code(), output_text(&out), rss)
}

/// The MiB in "needs --memory NM at least", if the text has it.
fn smallest_budget(text: &str) -> Option<u64> {
    let rest = &text[text.find("needs --memory ")? + "needs --memory ".len()..];
    rest[..rest.find("M at least")?].parse().ok()
}

/// Runs `args` at the smallest budget it accepts (raising it while a later pass asks for more)
/// and returns (budget, peak RSS) of the run that succeeded.
fn at_smallest_budget(args: &[&str]) -> (u64, u64) {
    let mut mib = 32;
    for _ in 0..8 {
        let memory = format!("{mib}M");
        let mut all = args.to_vec();
        all.extend_from_slice(&["--memory", &memory]);
        let (code, text, rss) = sluice_rss(&all);
        match (code, smallest_budget(&text)) {
            (Some(0), _) => return (mib << 20, rss),
            (Some(2), Some(need)) if need > mib => mib = need,
            _ => panic!("sluice {}: {text}", all.join(" ")),
        }
    }
    panic!("sluice {}: no budget found", args.join(" "));
}

#[test]
fn weighted_runs_peak_within_their_budget() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    // Scale 21, 4 edges per vertex: 16.8 M stored weighted edges, 14 x 14 partitions.
    let make = ["graph", "gen", "--scale", "21", "--edge-factor", "4", "--weights", "-o"];
    let (code, text, _) = sluice_rss(&[&make[..], &[&d("k.bin")]].concat());
    assert_eq!(code, Some(0), "{text}");
    let (code, text, _) = sluice_rss(&[
        "graph",
        "import",
        "--format",
        "bin",
        "--weight",
        "f32",
        "--undirected",
        "--memory",
        "256M",
        &d("k.bin"),
        "-o",
        &d("k.grid"),
    ]);
    assert_eq!(code, Some(0), "{text}");
    std::fs::remove_file(d("k.bin")).unwrap();
    // A source and the vector x: the first stored vertex ids.
    let ids = std::fs::read(Path::new(&d("k.grid")).join("ids.bin")).unwrap();
    let id = |i: usize| u64::from_le_bytes(ids[i * 8..i * 8 + 8].try_into().unwrap()).to_string();
    std::fs::write(d("x.txt"), format!("{} 1.5\n{} 2\n{} 0.25\n", id(0), id(1), id(2))).unwrap();
    let (store, src, out) = (d("k.grid"), id(0), d("out.txt"));
    let runs: [&[&str]; 3] = [
        &["graph", "sssp", &store, "--source", &src, "-o", &out],
        &["graph", "sssp", &store, "--source", &src, "--in-memory", "-o", &out],
        &["graph", "spmv", &store, "--vector", &d("x.txt"), "-o", &out],
    ];
    for run in runs {
        let (budget, rss) = at_smallest_budget(run);
        assert!(
            rss <= budget + SLACK,
            "{}: peak RSS {} MiB at --memory {} MiB",
            run.join(" "),
            rss >> 20,
            budget >> 20
        );
    }
}
