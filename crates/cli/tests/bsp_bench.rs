//! `sluice bsp bench` as a black box: it writes no file into the working directory unless asked
//! (issue 10, item 7: it used to drop `bsp-bench.json` wherever it ran), the file it writes
//! with `-o FILE` holds the reports, `--json` prints them as every subcommand's `--json` does
//! (issue 16 item 11), and `--memory` bounds it (issue 17 item 13).

use std::process::Command;

fn bench(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["bsp", "bench", "--quick", "--p", "1", "--no-save"])
        .args(extra)
        .current_dir(dir)
        .output()
        .expect("run sluice")
}

#[test]
fn bench_writes_nothing_into_the_working_directory_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let o = bench(dir.path(), &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(left.is_empty(), "files left in the working directory: {left:?}");
    assert!(!String::from_utf8_lossy(&o.stdout).contains("wrote"));
}

#[test]
fn bench_json_file_holds_the_reports() {
    let dir = tempfile::tempdir().unwrap();
    let o = bench(dir.path(), &["-o", "out.json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("wrote out.json"));
    let text = std::fs::read_to_string(dir.path().join("out.json")).unwrap();
    let reports: serde_json::Value = serde_json::from_str(&text).unwrap();
    let reports = reports.as_array().expect("a JSON array of reports");
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0]["p"], 1, "{}", reports[0]);
    let names: Vec<_> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["out.json"], "only the asked-for file");
}

#[test]
fn bench_json_prints_the_reports_on_stdout_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let o = bench(dir.path(), &["--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let reports: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    assert_eq!(reports.as_array().map(Vec::len), Some(1), "{reports}");
    assert_eq!(reports[0]["p"], 1);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn bench_sizes_fit_the_memory_budget_and_an_impossible_p_is_refused_with_numbers() {
    let dir = tempfile::tempdir().unwrap();
    // p = 16 quick asks for several GiB; under 256M it shrinks and stays under the budget.
    let o = Command::new("/usr/bin/time")
        .args(["-f", "maxrss_kib %M", env!("CARGO_BIN_EXE_sluice")])
        .args(["bsp", "bench", "--quick", "--p", "16", "--no-save", "--memory", "256M"])
        .current_dir(dir.path())
        .output();
    match o {
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "{err}");
            assert!(err.contains("sizes shrunk to fit the memory budget"), "{err}");
            let rss: u64 = err
                .lines()
                .find_map(|l| l.strip_prefix("maxrss_kib "))
                .and_then(|v| v.trim().parse().ok())
                .expect("GNU time's line");
            assert!(rss * 1024 <= 256 << 20, "peak RSS {rss} KiB over the 256M budget");
        }
        Err(e) => println!("skipping the RSS check: /usr/bin/time did not run ({e})"),
    }
    let o = bench(dir.path(), &["--p", "100000", "--memory", "1G"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("p = 100000 needs at least") && err.contains("--memory"), "{err}");
}

#[test]
fn probe_json_is_one_object_with_the_figures_the_table_prints() {
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["bsp", "probe", "--p", "2", "--json"])
        .output()
        .expect("run sluice");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    assert_eq!(v["p"], 2);
    let points = v["points"].as_array().expect("points");
    assert_eq!(points.len(), 4);
    assert!(points.iter().all(|pt| pt["g_s_per_byte"].as_f64().is_some_and(|g| g >= 0.0)));
}
