//! The block cache from the command line (issue 15 lever 2): `--no-cache` and the default give
//! the same output files; the `--json` report says what each pass read and what was resident;
//! the peak RSS stays within `--memory` with the cache on: the largest of every run's
//! own peak, each read with GNU time (`sluice_testkit::output_with_peak_rss`).

use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};

use sluice_testkit::{output_text, output_with_peak_rss};

const BUDGET_MIB: u64 = 160;

fn sluice(args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
    cmd.args(args);
    let (out, rss) = output_with_peak_rss(&cmd);
    PEAK.fetch_max(rss, Ordering::Relaxed);
    out
}

fn ok(args: &[&str]) -> String {
    let out = sluice(args);
    assert!(out.status.success(), "sluice {}:\n{}", args.join(" "), output_text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The largest peak RSS in bytes of any run so far, each its own (read with GNU time).
static PEAK: AtomicU64 = AtomicU64::new(0);

fn children_peak_rss() -> u64 {
    PEAK.load(Ordering::Relaxed)
}

#[test]
fn the_cache_changes_what_is_read_not_what_is_computed() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let mem = format!("{BUDGET_MIB}M");
    let (bin, grid) = (d("k.bin"), d("k.grid"));
    ok(&["graph", "gen", "--scale", "17", "--weights", "-o", &bin]);
    let import = ["graph", "import", "--format", "bin", "--directed", "--weight", "f32"];
    let mut args = import.to_vec();
    args.extend(["--memory", &mem, &bin, "-o", &grid]);
    ok(&args);
    // A root that occurs in the graph: the first id of a PageRank output.
    ok(&["graph", "pagerank", &grid, "--iterations", "1", "-o", &d("ids.txt")]);
    let ids = std::fs::read_to_string(d("ids.txt")).unwrap();
    let source = ids.lines().next().unwrap().split_whitespace().next().unwrap().to_string();
    for (algo, extra) in [
        ("pagerank", vec!["--iterations", "20"]),
        ("bfs", vec!["--source", &source]),
        ("sssp", vec!["--source", &source]),
        ("cdlp", vec!["--iterations", "5"]),
    ] {
        let mut reports = Vec::new();
        for cache in [true, false] {
            let out = d(&format!("{algo}-{cache}.txt"));
            let mut args = vec!["graph", algo, &grid, "--memory", &mem, "--json"];
            args.extend(&extra);
            args.extend(["-o", &out]);
            if !cache {
                args.push("--no-cache");
            }
            let v: serde_json::Value = serde_json::from_str(&ok(&args)).unwrap();
            reports.push((std::fs::read(&out).unwrap(), v));
        }
        let ((on, von), (off, voff)) = (&reports[0], &reports[1]);
        assert!(on == off, "{algo}: the output differs with --no-cache");
        let per_pass = |v: &serde_json::Value| -> Vec<u64> {
            let p = v["bytes_read_per_pass"].as_array().unwrap();
            p.iter().map(|b| b.as_u64().unwrap()).collect()
        };
        assert_eq!(voff["cache"]["resident_bytes"], 0, "{algo}: --no-cache keeps nothing");
        assert!(per_pass(voff).iter().all(|&b| b > 0), "{algo}: without the cache all read");
        if algo == "pagerank" {
            // The forward grid (PageRank reads no weights) fits 160M: kept whole by pass 1.
            let on_reads = per_pass(von);
            assert!(on_reads[0] > 0 && on_reads[1..].iter().all(|&b| b == 0), "{on_reads:?}");
            let frac = von["cache"]["resident_fraction"].as_f64().unwrap();
            assert!(frac > 0.0 && frac <= 1.0, "resident fraction {frac}");
            let kept = von["cache"]["resident_bytes"].as_u64().unwrap();
            assert_eq!(von["cache"]["bytes_from_cache"].as_u64(), Some(19 * kept));
        }
    }
    let peak = children_peak_rss();
    assert!(peak <= BUDGET_MIB << 20, "peak RSS {peak} bytes over {mem}");
}
