//! PageRank, BFS and WCC through the CLI on every LDBC Graphalytics validation graph that has
//! their expected output (`shared/datasets/ldbc`), checked with LDBC's rules
//! (`specs/graphalytics.md` §3): exact for BFS, equivalence for WCC, epsilon 1e-4 for PR.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use sluice_testkit::ldbc_properties as properties;

const LDBC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/datasets/ldbc");

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

fn run_ok(cmd: &mut Command) {
    let out = cmd.output().expect("run sluice");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
}

fn read_pairs(path: &Path) -> BTreeMap<u64, String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (id, v) = l.trim().split_once(' ').unwrap_or_else(|| panic!("bad line {l:?}"));
            (id.parse().unwrap(), v.trim().to_string())
        })
        .collect()
}

fn parse_f64(s: &str) -> f64 {
    let t = s.trim().trim_start_matches('+').to_ascii_lowercase();
    if t == "inf" || t == "infinity" { f64::INFINITY } else { t.parse().unwrap() }
}

/// LDBC's rules; returns the first few mismatches.
fn validate(
    alg: &str,
    actual: &BTreeMap<u64, String>,
    expected: &BTreeMap<u64, String>,
) -> Vec<String> {
    let mut bad = Vec::new();
    if actual.keys().ne(expected.keys()) {
        bad.push(format!("vertex sets differ: {} vs {} vertices", actual.len(), expected.len()));
        return bad;
    }
    match alg {
        "bfs" => {
            for (id, e) in expected {
                if actual[id].parse::<i64>().ok() != e.parse::<i64>().ok() {
                    bad.push(format!("vertex {id}: {} != {e}", actual[id]));
                }
            }
        }
        "pr" => {
            for (id, e) in expected {
                let (a, e) = (parse_f64(&actual[id]), parse_f64(e));
                let ok = if e == 0.0 {
                    a == 0.0
                } else if e.is_infinite() {
                    a == e
                } else {
                    (e - a).abs() <= 1e-4 * e.abs()
                };
                if !ok {
                    bad.push(format!("vertex {id}: {a} vs expected {e}"));
                }
            }
        }
        "wcc" => {
            // Equivalence: a bijection between actual and expected labels.
            let (mut fwd, mut back) = (HashMap::new(), HashMap::new());
            for (id, e) in expected {
                let a = &actual[id];
                if *fwd.entry(a.clone()).or_insert(e.clone()) != *e
                    || *back.entry(e.clone()).or_insert(a.clone()) != *a
                {
                    bad.push(format!("vertex {id}: label {a} does not map to {e}"));
                }
            }
        }
        _ => unreachable!(),
    }
    bad.truncate(5);
    bad
}

#[test]
fn ldbc_validation_graphs_pass_pr_bfs_wcc() {
    let root = PathBuf::from(LDBC);
    if !root.is_dir() {
        println!("skipping: {} not found", root.display());
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    let mut failures = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let props_path = dir.join(format!("{name}.properties"));
        if !props_path.is_file() {
            continue;
        }
        let props = properties(&props_path);
        let store = tmp.path().join(format!("{name}.grid"));
        run_ok(
            sluice()
                .args(["graph", "import", "--format", "ldbc", "-o"])
                .arg(&store)
                .arg(&props_path),
        );
        for (alg, suffix) in [("bfs", "BFS"), ("pr", "PR"), ("wcc", "WCC")] {
            let expected_path = dir.join(format!("{name}-{suffix}"));
            if !expected_path.is_file() {
                continue;
            }
            // Both modes: streaming every pass, and edges held in memory.
            for in_memory in [false, true] {
                let out = tmp.path().join(format!("{name}-{alg}-{in_memory}.out"));
                let mut cmd = sluice();
                cmd.arg("graph");
                match alg {
                    "bfs" => {
                        cmd.args(["bfs", "--source", &props["bfs.source-vertex"]]);
                    }
                    "pr" => {
                        cmd.args([
                            "pagerank",
                            "--iterations",
                            &props["pr.num-iterations"],
                            "--damping",
                            &props["pr.damping-factor"],
                        ]);
                    }
                    _ => {
                        cmd.arg("wcc");
                    }
                }
                if in_memory {
                    cmd.arg("--in-memory");
                }
                run_ok(cmd.arg(&store).arg("-o").arg(&out));
                let bad = validate(alg, &read_pairs(&out), &read_pairs(&expected_path));
                if !bad.is_empty() {
                    failures.push(format!("{name} {alg} (in memory: {in_memory}): {bad:?}"));
                }
                checked += 1;
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    // 6 graphs with BFS, PR or WCC output: example-{directed,undirected} (3 each) and the
    // test-{bfs,pr,wcc}-* pairs: 12 outputs, each in two modes.
    assert_eq!(checked, 24, "expected 12 reference outputs checked in 2 modes");
}

#[test]
fn validator_follows_the_ldbc_rule_examples() {
    let dir = PathBuf::from(LDBC).join("validation-rule-examples");
    if !dir.is_dir() {
        println!("skipping: {} not found", dir.display());
        return;
    }
    let load = |f: &str| -> BTreeMap<u64, String> {
        std::fs::read_to_string(dir.join(f))
            .unwrap()
            .lines()
            .filter_map(|l| {
                let t: Vec<&str> = l.split([' ', ',']).filter(|t| !t.is_empty()).collect();
                Some((t.first()?.parse().ok()?, t.get(1)?.to_string()))
            })
            .collect()
    };
    for (alg, stem) in [("bfs", "exact"), ("pr", "epsilon"), ("wcc", "equivalence")] {
        let exp = load(&format!("{stem}_expected.csv"));
        assert!(validate(alg, &load(&format!("{stem}_actual1.csv")), &exp).is_empty(), "{stem} 1");
        assert!(!validate(alg, &load(&format!("{stem}_actual2.csv")), &exp).is_empty(), "{stem} 2");
    }
}
