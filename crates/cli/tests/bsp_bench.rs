//! `sluice bsp bench` as a black box: it writes no file into the working directory unless asked
//! (issue 10, item 7: it used to drop `bsp-bench.json` wherever it ran), and the file it writes
//! with `--json FILE` holds the reports it printed.

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
    let o = bench(dir.path(), &["--json", "out.json"]);
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
