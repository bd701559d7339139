//! What a new user reads in the first hour (issue 16): the demo names where each read came from
//! (item 6), graph results read like results (item 7), `--format bin` says what it assumed and
//! doubts a layout that looks weighted (item 8), and comma-separated SNAP edges import (item 13).

use std::path::Path;
use std::process::{Command, Output};

use sluice_testkit::output_text;

fn sluice<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice")).args(args).output().expect("run sluice")
}

fn ok(args: &[&str]) -> Output {
    let out = sluice(args);
    assert!(out.status.success(), "sluice {}:\n{}", args.join(" "), output_text(&out));
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_demo_names_the_read_path_of_every_pass_and_its_total_time() {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join("demo");
    let out = ok(&["demo", "--size", "8M", "--scale", "10", "--dir", &keep.to_string_lossy()]);
    let text = stdout(&out);
    let reads: Vec<&str> = text.lines().filter(|l| l.trim_start().starts_with("read ")).collect();
    assert!(reads.len() >= 6, "{text}");
    for line in &reads {
        let named = ["from the page cache", "from the device", "through the page cache"];
        assert!(named.iter().any(|n| line.contains(n)), "no read path in {line:?}");
        assert!(!line.contains("GB/s"), "decimal units in {line:?}");
        // A multi-pass graph run whose later passes came from the block cache keeps the
        // engine of the passes that read (it printed "(engine )" until session 30).
        assert!(!line.contains("(engine )") && !line.contains("( "), "blank setting in {line:?}");
    }
    // The array is read twice: warm (just written) and again after its pages were dropped.
    assert!(text.contains("again after dropping the file from the page cache"), "{text}");
    assert!(text.contains("copies: \"seam\""), "{text}");
    assert!(text.lines().any(|l| l.starts_with("sluice demo: done in ")), "{text}");
}

/// A SNAP file of two components: a path 1 -> 2 -> 3 -> 4 and a pair 10 -> 11.
fn two_components(dir: &Path) -> String {
    let input = dir.join("g.txt");
    std::fs::write(&input, "1 2\n2 3\n3 4\n10 11\n").unwrap();
    let store = dir.join("g.grid").to_string_lossy().into_owned();
    ok(&[
        "graph",
        "import",
        "--format",
        "snap",
        "--directed",
        &input.to_string_lossy(),
        "-o",
        &store,
    ]);
    store
}

#[test]
fn graph_results_print_a_summary_a_header_and_plain_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let store = two_components(dir.path());
    let bfs = stdout(&ok(&["graph", "bfs", &store, "--source", "1", "--top", "2"]));
    // From 1 along the edges: 1, 2, 3, 4 at depths 0..3; 10 and 11 unreached.
    assert!(bfs.contains("bfs from 1: reached 4 of 6 vertices, deepest level 3"), "{bfs}");
    let header: Vec<&str> = bfs.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(header, ["vertex", "depth"], "{bfs}");
    assert_eq!(bfs.lines().nth(2).unwrap().split_whitespace().collect::<Vec<_>>(), ["4", "3"]);
    let wcc = stdout(&ok(&["graph", "wcc", &store]));
    assert!(wcc.contains("wcc: 2 components, the largest has 4 vertices"), "{wcc}");
    let pr = stdout(&ok(&["graph", "pagerank", &store, "--top", "3", "--iterations", "5"]));
    assert!(pr.lines().nth(1).unwrap().ends_with("rank"), "{pr}");
    for row in pr.lines().skip(2) {
        let value = row.split_whitespace().nth(1).unwrap();
        assert!(!value.contains('e'), "scientific notation for a rank: {row}");
        let x: f64 = value.parse().unwrap();
        assert!(x > 0.0 && x < 1.0, "{row}");
    }
    // The machine-readable form keeps the full value.
    let json = stdout(&ok(&["graph", "pagerank", &store, "--top", "1", "--json"]));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(v["top"][0][1].as_f64().is_some(), "{json}");
}

#[test]
fn bin_import_says_what_it_assumed_and_doubts_a_weighted_layout() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    ok(&["graph", "gen", "--scale", "8", "--weights", "-o", &d("w.bin")]);
    ok(&["graph", "gen", "--scale", "8", "-o", &d("u.bin")]);
    let err = |o: &Output| String::from_utf8_lossy(&o.stderr).into_owned();
    // Weighted records read without --weight: the note says how to read them.
    let o = ok(&["graph", "import", "--format", "bin", &d("w.bin"), "-o", &d("w1.grid")]);
    assert!(
        err(&o).contains("read as directed") && err(&o).contains("--weight f32"),
        "{}",
        err(&o)
    );
    // Read as the generator wrote them: no doubt left.
    let o = ok(&[
        "graph",
        "import",
        "--format",
        "bin",
        "--directed",
        "--weight",
        "f32",
        &d("w.bin"),
        "-o",
        &d("w2.grid"),
    ]);
    assert!(!err(&o).contains("note:"), "{}", err(&o));
    // Unweighted records (whatever their count) are not doubted.
    let o = ok(&[
        "graph",
        "import",
        "--format",
        "bin",
        "--undirected",
        &d("u.bin"),
        "-o",
        &d("u.grid"),
    ]);
    assert!(!err(&o).contains("note:"), "{}", err(&o));
}

#[test]
fn comma_separated_snap_edges_import_as_the_same_graph() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    std::fs::write(d("c.csv"), "# src,dst\n1,2\n2,3\n3,1\n").unwrap();
    std::fs::write(d("s.txt"), "# src dst\n1 2\n2 3\n3 1\n").unwrap();
    for name in ["c.csv", "s.txt"] {
        let store = d(&format!("{name}.grid"));
        ok(&["graph", "import", "--format", "snap", "--directed", &d(name), "-o", &store]);
        ok(&["graph", "pagerank", &store, "--iterations", "3", "-o", &d(&format!("{name}.pr"))]);
    }
    let (csv, txt) = (std::fs::read(d("c.csv.pr")).unwrap(), std::fs::read(d("s.txt.pr")).unwrap());
    assert!(!csv.is_empty() && csv == txt, "the CSV graph ranks differently");
}
