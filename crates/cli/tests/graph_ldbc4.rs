//! Issue 4 through the CLI: all six LDBC algorithms on every LDBC validation graph
//! (`shared/datasets/ldbc`), each output checked by `sluice graph validate`; the validator on
//! LDBC's rule examples; the `sluice graph ldbc` driver; SpMV on a hand-checked graph; bad input
//! (exit 2, one clear line).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sluice_testkit::{assert_error, ldbc_properties as properties, output_text as text};

const LDBC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/datasets/ldbc");

fn sluice<I: IntoIterator<Item = S>, S: AsRef<std::ffi::OsStr>>(args: I) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice")).args(args).output().expect("run sluice")
}

fn ok(out: Output) -> Output {
    assert!(out.status.success(), "failed: {}", text(&out));
    out
}

fn ldbc_root() -> Option<PathBuf> {
    let root = PathBuf::from(LDBC);
    if root.is_dir() {
        Some(root)
    } else {
        println!("skipping: {} not found", root.display());
        None
    }
}

fn graph_dirs(root: &Path) -> Vec<(String, PathBuf)> {
    let mut dirs: Vec<_> = std::fs::read_dir(root).unwrap().map(|e| e.unwrap().path()).collect();
    dirs.sort();
    dirs.into_iter()
        .filter_map(|d| {
            let name = d.file_name()?.to_string_lossy().to_string();
            d.join(format!("{name}.properties")).is_file().then_some((name, d))
        })
        .collect()
}

#[test]
fn all_six_algorithms_pass_every_ldbc_validation_graph() {
    let Some(root) = ldbc_root() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (mut outputs, mut runs, mut failures) = (0, 0, Vec::new());
    for (name, dir) in graph_dirs(&root) {
        let props_path = dir.join(format!("{name}.properties"));
        let p = properties(&props_path);
        let store = tmp.path().join(format!("{name}.grid"));
        ok(sluice([
            "graph",
            "import",
            "--format",
            "ldbc",
            "-o",
            store.to_str().unwrap(),
            props_path.to_str().unwrap(),
        ]));
        for (alg, suffix) in [
            ("bfs", "BFS"),
            ("pr", "PR"),
            ("wcc", "WCC"),
            ("cdlp", "CDLP"),
            ("lcc", "LCC"),
            ("sssp", "SSSP"),
        ] {
            let expected = dir.join(format!("{name}-{suffix}"));
            if !expected.is_file() {
                continue;
            }
            outputs += 1;
            for mode in ["stream", "in-memory", "npy"] {
                let out = tmp.path().join(format!(
                    "{name}-{alg}-{mode}{}",
                    if mode == "npy" { ".npy" } else { "" }
                ));
                let mut args: Vec<String> = vec!["graph".into()];
                let param = |k: &str| p[k].clone();
                match alg {
                    "bfs" => {
                        args.extend(["bfs".into(), "--source".into(), param("bfs.source-vertex")])
                    }
                    "pr" => args.extend([
                        "pagerank".into(),
                        "--iterations".into(),
                        param("pr.num-iterations"),
                        "--damping".into(),
                        param("pr.damping-factor"),
                    ]),
                    "cdlp" => args.extend([
                        "cdlp".into(),
                        "--iterations".into(),
                        param("cdlp.max-iterations"),
                    ]),
                    "sssp" => {
                        args.extend(["sssp".into(), "--source".into(), param("sssp.source-vertex")])
                    }
                    other => args.push(other.into()),
                }
                args.extend([
                    store.to_string_lossy().into(),
                    "-o".into(),
                    out.to_string_lossy().into(),
                ]);
                if mode == "in-memory" {
                    args.push("--in-memory".into());
                }
                ok(sluice(&args));
                let v = sluice([
                    "graph",
                    "validate",
                    out.to_str().unwrap(),
                    expected.to_str().unwrap(),
                    "--algorithm",
                    alg,
                ]);
                if !v.status.success() {
                    failures.push(format!("{name} {alg} {mode}: {}", text(&v)));
                }
                runs += 1;
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(outputs, 24, "LDBC ships 24 reference outputs over 14 graphs");
    assert_eq!(runs, 72);
}

#[test]
fn sssp_writes_infinity_and_the_validator_is_strict() {
    let Some(root) = ldbc_root() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = root.join("example-directed");
    let store = tmp.path().join("g.grid");
    ok(sluice([
        "graph",
        "import",
        "--format",
        "ldbc",
        "-o",
        store.to_str().unwrap(),
        dir.join("example-directed.properties").to_str().unwrap(),
    ]));
    let out = tmp.path().join("sssp.txt");
    ok(sluice([
        "graph",
        "sssp",
        store.to_str().unwrap(),
        "--source",
        "1",
        "-o",
        out.to_str().unwrap(),
    ]));
    let t = std::fs::read_to_string(&out).unwrap();
    assert!(t.lines().any(|l| l == "2 infinity"), "{t}");
    // A wrong iteration count or a changed value fails (exit 1) and names the vertex.
    let cdlp = tmp.path().join("cdlp.txt");
    ok(sluice([
        "graph",
        "cdlp",
        store.to_str().unwrap(),
        "--iterations",
        "3",
        "-o",
        cdlp.to_str().unwrap(),
    ]));
    let v = sluice([
        "graph",
        "validate",
        cdlp.to_str().unwrap(),
        dir.join("example-directed-CDLP").to_str().unwrap(),
        "--algorithm",
        "cdlp",
    ]);
    assert_eq!(v.status.code(), Some(1), "{}", text(&v));
    assert!(text(&v).contains("FAIL") && text(&v).contains("vertex"), "{}", text(&v));
    let wrong = tmp.path().join("wrong.txt");
    std::fs::write(&wrong, t.replace("2 infinity", "2 1.79769e308")).unwrap();
    let v = sluice([
        "graph",
        "validate",
        wrong.to_str().unwrap(),
        dir.join("example-directed-SSSP").to_str().unwrap(),
        "--algorithm",
        "sssp",
    ]);
    assert_eq!(v.status.code(), Some(1), "{}", text(&v));
    assert!(text(&v).contains("vertex 2:"), "{}", text(&v));
    // Coverage: a missing vertex fails; a line that is not `id value` is an input error.
    let short: String = t.lines().skip(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(&wrong, short).unwrap();
    let v = sluice([
        "graph",
        "validate",
        wrong.to_str().unwrap(),
        dir.join("example-directed-SSSP").to_str().unwrap(),
        "--algorithm",
        "sssp",
        "--json",
    ]);
    assert_eq!(v.status.code(), Some(1));
    assert!(text(&v).contains("not in the output"), "{}", text(&v));
    std::fs::write(&wrong, "1 0\n2 zero\n").unwrap();
    let v = sluice([
        "graph",
        "validate",
        wrong.to_str().unwrap(),
        dir.join("example-directed-SSSP").to_str().unwrap(),
        "--algorithm",
        "sssp",
    ]);
    assert_error(&v, &["wrong.txt:2", "not a number"]);
}

#[test]
fn validate_follows_the_ldbc_rule_examples() {
    let Some(root) = ldbc_root() else { return };
    let dir = root.join("validation-rule-examples");
    for (alg, stem) in [
        ("bfs", "exact"),
        ("cdlp", "exact"),
        ("wcc", "equivalence"),
        ("sssp", "epsilon"),
        ("lcc", "epsilon"),
        ("spmv", "epsilon"),
    ] {
        let exp = dir.join(format!("{stem}_expected.csv"));
        for (i, want) in [(1, 0), (2, 1)] {
            let act = dir.join(format!("{stem}_actual{i}.csv"));
            let v = sluice([
                "graph",
                "validate",
                act.to_str().unwrap(),
                exp.to_str().unwrap(),
                "--algorithm",
                alg,
            ]);
            assert_eq!(v.status.code(), Some(want), "{alg} {stem} actual{i}: {}", text(&v));
        }
    }
}

#[test]
fn ldbc_driver_runs_and_validates_every_graph() {
    let Some(root) = ldbc_root() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut validated = 0;
    for (name, dir) in graph_dirs(&root) {
        let props = dir.join(format!("{name}.properties"));
        let out_dir = tmp.path().join(&name);
        let o = ok(sluice([
            "graph",
            "ldbc",
            props.to_str().unwrap(),
            "--output-dir",
            out_dir.to_str().unwrap(),
            "--json",
        ]));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["ok"], true, "{v}");
        for a in v["algorithms"].as_array().unwrap() {
            assert_eq!(a["ok"], true, "{name}: {a}");
            validated += 1;
            let alg = a["algorithm"].as_str().unwrap().to_ascii_uppercase();
            assert!(out_dir.join(format!("{name}-{alg}")).is_file());
        }
    }
    assert_eq!(validated, 24);
    // A wrong reference makes the driver fail with exit 1 and name the vertex.
    let copy = tmp.path().join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    for f in std::fs::read_dir(root.join("test-cdlp-directed")).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, copy.join(f.file_name().unwrap())).unwrap();
    }
    let refp = copy.join("test-cdlp-directed-CDLP");
    let t = std::fs::read_to_string(&refp).unwrap();
    let first = t.lines().next().unwrap().split(' ').next().unwrap().to_string();
    let changed: String = t
        .lines()
        .enumerate()
        .map(|(i, l)| if i == 0 { format!("{first} 999\n") } else { format!("{l}\n") })
        .collect();
    std::fs::write(&refp, changed).unwrap();
    let o = sluice(["graph", "ldbc", copy.join("test-cdlp-directed.properties").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains(&format!("vertex {first}:")), "{}", text(&o));
}

fn import_snap(dir: &Path, name: &str, body: &str, extra: &[&str]) -> (Output, PathBuf) {
    let input = dir.join(name);
    std::fs::write(&input, body).unwrap();
    let store = dir.join(format!("{name}.grid"));
    let mut args = vec!["graph", "import", "--format", "snap"];
    args.extend(extra);
    args.extend([input.to_str().unwrap(), "-o", store.to_str().unwrap()]);
    (sluice(&args), store)
}

#[test]
fn spmv_on_a_small_weighted_graph() {
    let tmp = tempfile::tempdir().unwrap();
    // Edges 10→20 (2), 10→30 (0.5), 20→30 (1), 30→10 (4), duplicate 10→20 (1); vertex 40 isolated.
    let (o, store) = import_snap(
        tmp.path(),
        "w.txt",
        "10 20 2\n10 30 0.5\n20 30 1\n30 10 4\n10 20 1\n40 40 0\n",
        &["--directed"],
    );
    ok(o);
    let x = tmp.path().join("x.txt");
    std::fs::write(&x, "10 1\n20 -2\n30 0.25\n").unwrap(); // 40 missing: x = 0
    let y = tmp.path().join("y.txt");
    ok(sluice([
        "graph",
        "spmv",
        store.to_str().unwrap(),
        "--vector",
        x.to_str().unwrap(),
        "-o",
        y.to_str().unwrap(),
    ]));
    let got: HashMap<u64, f64> = std::fs::read_to_string(&y)
        .unwrap()
        .lines()
        .map(|l| {
            let (a, b) = l.split_once(' ').unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect();
    // y_d = Σ w(s,d) x_s: y10 = 4·0.25, y20 = (2+1)·1, y30 = 0.5·1 + 1·(−2), y40 = 0·0.
    assert_eq!(got, HashMap::from([(10, 1.0), (20, 3.0), (30, -1.5), (40, 0.0)]));
    // The .npy output reads back as a vector: A^T y from y.npy equals A^T y from y.txt.
    let ynpy = tmp.path().join("y.npy");
    ok(sluice([
        "graph",
        "spmv",
        store.to_str().unwrap(),
        "--vector",
        x.to_str().unwrap(),
        "-o",
        ynpy.to_str().unwrap(),
    ]));
    let (w1, w2) = (tmp.path().join("w1.txt"), tmp.path().join("w2.txt"));
    ok(sluice([
        "graph",
        "spmv",
        store.to_str().unwrap(),
        "--vector",
        ynpy.to_str().unwrap(),
        "-o",
        w1.to_str().unwrap(),
    ]));
    ok(sluice([
        "graph",
        "spmv",
        store.to_str().unwrap(),
        "--vector",
        y.to_str().unwrap(),
        "-o",
        w2.to_str().unwrap(),
    ]));
    assert_eq!(std::fs::read_to_string(&w1).unwrap(), std::fs::read_to_string(&w2).unwrap());
}

#[test]
fn bad_input_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (o, store) = import_snap(tmp.path(), "g.txt", "1 2 0.5\n2 3 1.5\n", &["--directed"]);
    ok(o);
    let s = store.to_str().unwrap();
    // SSSP: a source that is not a vertex.
    assert_error(
        &sluice(["graph", "sssp", s, "--source", "99"]),
        &["--source", "vertex 99 is not in the graph"],
    );
    // Negative and NaN weights are refused when the graph is read (SSSP never sees them).
    let (o, _) = import_snap(tmp.path(), "neg.txt", "1 2 0.5\n2 3 -1\n", &["--directed"]);
    assert_error(&o, &["neg.txt:2", "weight"]);
    let (o, _) = import_snap(tmp.path(), "nan.txt", "1 2 NaN\n", &["--directed"]);
    assert_error(&o, &["nan.txt:1", "weight"]);
    // SpMV vectors: unknown id, bad number, NaN, repeated id, wrong shape — file:line each.
    for (body, line, msg) in [
        ("1 1\n7 2\n", 2, "vertex 7 is not in the graph"),
        ("1 1\n2 x\n", 2, "not a finite number"),
        ("1 nan\n", 1, "not a finite number"),
        ("1 1\n3 2\n1 3\n", 3, "listed twice"),
        ("1 1 1\n", 1, "expected `id value`"),
        ("-1 1\n", 1, "not an unsigned integer"),
    ] {
        let v = tmp.path().join("v.txt");
        std::fs::write(&v, body).unwrap();
        let out = sluice(["graph", "spmv", s, "--vector", v.to_str().unwrap()]);
        assert_error(&out, &[&format!("v.txt:{line}"), msg]);
    }
    assert_error(
        &sluice(["graph", "spmv", s, "--vector", "/nonexistent/x.txt"]),
        &["/nonexistent/x.txt"],
    );
    // CDLP / LCC on something that is not a store.
    assert_error(&sluice(["graph", "lcc", tmp.path().to_str().unwrap()]), &["meta.json"]);
    // A budget too small for the adjacency lists is a budget error, not a crash.
    let out = sluice(["graph", "cdlp", s, "--memory", "70M"]);
    assert!(out.status.code() == Some(0) || out.status.code() == Some(2), "{}", text(&out));
    assert!(!text(&out).contains("panicked"));
}

#[test]
fn a_flipped_byte_in_a_grid_is_reported_by_the_adjacency_stream() {
    let Some(root) = ldbc_root() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let props = root.join("example-directed").join("example-directed.properties");
    for file in ["fwd.edges", "rev.edges"] {
        let store = tmp.path().join(format!("{file}.grid"));
        ok(sluice([
            "graph",
            "import",
            "--format",
            "ldbc",
            "-o",
            store.to_str().unwrap(),
            props.to_str().unwrap(),
        ]));
        let path = store.join(file);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[5] ^= 0x10;
        std::fs::write(&path, bytes).unwrap();
        for alg in ["cdlp", "lcc"] {
            for extra in [None, Some("--in-memory")] {
                let mut args = vec!["graph", alg, store.to_str().unwrap()];
                args.extend(extra);
                assert_error(&sluice(&args), &[file, "checksum"]);
            }
        }
    }
}
