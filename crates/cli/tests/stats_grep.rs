//! `sluice stats` and `sluice grep` as a black box: a temporary directory, the built binary, exit
//! codes, stdout and stderr. Bad input must give exit status 2 and a one-line message naming the
//! file, never a panic.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn sluice(args: &[&str]) -> Output {
    sluice_env(args, &[])
}

fn sluice_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run sluice")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit status 2, one `sluice: ` line containing every word in `words`, no panic.
fn assert_fails(o: &Output, words: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(err.starts_with("sluice: "), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    for w in words {
        assert!(err.contains(w), "{w:?} not in {err}");
    }
}

fn json(o: &Output) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(o));
    serde_json::from_slice(&o.stdout).expect("one JSON object")
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A version 1.0 `.npy` header, as numpy writes it.
fn npy_header(descr: &str, shape: &str) -> Vec<u8> {
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn help_for_both_subcommands() {
    for sub in ["stats", "grep"] {
        let o = sluice(&[sub, "--help"]);
        assert_eq!(o.status.code(), Some(0));
        assert!(stdout(&o).contains("--json") && stdout(&o).contains("--hint"), "{}", stdout(&o));
    }
}

#[test]
fn stats_json_has_every_key_and_exact_figures() {
    let dir = tempfile::tempdir().unwrap();
    let values = [1.5f64, -2.0, f64::NAN, 4.5, 0.0];
    let mut bytes = npy_header("<f8", "(5,)");
    bytes.extend(values.iter().flat_map(|x| x.to_le_bytes()));
    let f = write(dir.path(), "a.npy", &bytes);
    let v = json(&sluice(&["stats", p(&f), "--json", "--bins", "2", "--range", "-2,4.5"]));
    for key in [
        "count",
        "nan_count",
        "sum",
        "min",
        "max",
        "mean",
        "variance",
        "variance_sample",
        "histogram",
        "run",
    ] {
        assert!(v.get(key).is_some(), "{key} missing in {v}");
    }
    assert_eq!((v["count"].as_u64(), v["nan_count"].as_u64()), (Some(5), Some(1)));
    assert_eq!(
        (v["sum"].as_f64(), v["min"].as_f64(), v["max"].as_f64()),
        (Some(4.0), Some(-2.0), Some(4.5))
    );
    assert_eq!(v["mean"].as_f64(), Some(1.0));
    // Deviations 0.5, -3, 3.5, -1: squares sum to 22.5.
    assert_eq!(
        (v["variance"].as_f64(), v["variance_sample"].as_f64()),
        (Some(22.5 / 4.0), Some(7.5))
    );
    // Edges -2, 1.25, 4.5: {-2, 0} and {1.5, 4.5} (the last bin is closed).
    assert_eq!(v["histogram"]["counts"], serde_json::json!([2, 2]));
    for key in ["bytes_read", "seconds", "bandwidth_bytes_per_s", "engine", "direct", "copies"] {
        assert!(v["run"].get(key).is_some(), "run.{key} missing in {v}");
    }
    assert_eq!(v["run"]["bytes_read"].as_u64(), Some(40));
}

#[test]
fn stats_integer_sums_print_as_json_integers_and_table_reads() {
    let dir = tempfile::tempdir().unwrap();
    let bytes: Vec<u8> = [u64::MAX, u64::MAX, 3].iter().flat_map(|x| x.to_be_bytes()).collect();
    let f = write(dir.path(), "x.u64", &bytes);
    let o = sluice(&["stats", p(&f), "--dtype", "u64", "--endian", "big", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let want = (2 * u64::MAX as u128 + 3).to_string();
    assert!(text.contains(&format!("\"sum\":{want},")), "{text}");
    // Hints set the same parameters as flags.
    let o = sluice(&["stats", p(&f), "--hint", "dtype=u64", "--hint", "endian=big"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains(&want) && stdout(&o).contains("count"), "{}", stdout(&o));
}

#[test]
fn stats_empty_array_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "e.npy", &npy_header("<i4", "(0,)"));
    let v = json(&sluice(&["stats", p(&f), "--json"]));
    assert_eq!((v["count"].as_u64(), v["sum"].as_i64()), (Some(0), Some(0)));
    assert!(v["min"].is_null() && v["max"].is_null() && v["mean"].is_null());
}

#[test]
fn stats_two_runs_give_identical_figures() {
    let dir = tempfile::tempdir().unwrap();
    let bytes: Vec<u8> =
        (0..300_000u32).flat_map(|i| ((i as f32 * 0.37).sin() * 1e3).to_le_bytes()).collect();
    let f = write(dir.path(), "r.f32", &bytes);
    let figures = || {
        let mut v =
            json(&sluice(&["stats", p(&f), "--dtype", "f32", "--json", "--block-size", "64K"]));
        v.as_object_mut().unwrap().remove("run");
        serde_json::to_vec(&v).unwrap()
    };
    assert_eq!(figures(), figures());
}

#[test]
fn stats_bad_input_exits_2_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let mut short = npy_header("<f8", "(10,)");
    let header_len = short.len();
    short.extend_from_slice(&[0u8; 40]);
    let f = write(dir.path(), "short.npy", &short);
    assert_fails(&sluice(&["stats", p(&f)]), &["short.npy", "truncated", "80", "40"]);
    let f = write(dir.path(), "header.npy", &short[..header_len - 20]);
    assert_fails(&sluice(&["stats", p(&f)]), &["header.npy", "truncated header"]);
    let mut complex = npy_header("<c16", "(1,)");
    complex.extend_from_slice(&[0u8; 16]);
    let f = write(dir.path(), "complex.npy", &complex);
    assert_fails(&sluice(&["stats", p(&f)]), &["complex.npy", "unsupported dtype", "<c16"]);
    let mut object = npy_header("|O", "(1,)");
    object.extend_from_slice(&[0u8; 8]);
    let f = write(dir.path(), "object.npy", &object);
    assert_fails(&sluice(&["stats", p(&f)]), &["object.npy", "object"]);
    let f = write(dir.path(), "odd.raw", &[0u8; 21]);
    assert_fails(&sluice(&["stats", p(&f), "--dtype", "i32"]), &["odd.raw", "21", "multiple", "4"]);
    assert_fails(&sluice(&["stats", p(&f)]), &["odd.raw", "--dtype"]);
    assert_fails(&sluice(&["stats", p(&f), "--dtype", "f128"]), &["dtype", "f128"]);
    let mut f8 = npy_header("<f8", "(1,)");
    f8.extend_from_slice(&[0u8; 8]);
    let f = write(dir.path(), "f8.npy", &f8);
    assert_fails(&sluice(&["stats", p(&f), "--dtype", "i64"]), &["f8.npy", "disagrees", "<f8"]);
    assert_fails(&sluice(&["stats", p(&f), "--hint", "colour=red"]), &["colour"]);
    assert_fails(&sluice(&["stats", p(&f), "--bins", "4"]), &["bins", "range"]);
    let missing = dir.path().join("missing.npy");
    assert_fails(&sluice(&["stats", p(&missing)]), &["missing.npy", "No such file"]);
    assert_fails(&sluice(&["stats", p(dir.path()), "--dtype", "u8"]), &["not a regular file"]);
}

#[test]
fn grep_counts_lists_and_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "t.txt", b"apple pie\nbanana\r\ncherry\nbanana split banana");
    let o = sluice(&["grep", "-c", "banana", p(&f)]);
    assert_eq!((o.status.code(), stdout(&o)), (Some(0), "2\n".to_string()));
    let o = sluice(&["grep", "--count-matches", "an", p(&f)]);
    assert_eq!(stdout(&o), "6\n");
    let o = sluice(&["grep", "-b", "ban", p(&f)]);
    assert_eq!(stdout(&o), "10:banana\r\n25:banana split banana\n");
    let o = sluice(&["grep", "ban", p(&f)]);
    assert_eq!(stdout(&o), "banana\r\nbanana split banana\n");
    let o = sluice(&["grep", "-c", "kiwi", p(&f)]);
    assert_eq!((o.status.code(), stdout(&o)), (Some(1), "0\n".to_string()));
    let o = sluice(&["grep", "-F", "a.", p(&f)]);
    assert_eq!(o.status.code(), Some(1));
    let o = sluice(&["grep", "-c", "--record-size", "6", "ana", p(&f)]);
    assert_eq!(stdout(&o), "3\n", "records: 'apple ', 'pie\\nba', 'nana\\r\\n', ...");
    let e = write(dir.path(), "empty.txt", b"");
    let o = sluice(&["grep", "-c", "", p(&e)]);
    assert_eq!((o.status.code(), stdout(&o)), (Some(1), "0\n".to_string()));
}

#[test]
fn grep_json_escapes_invalid_utf8_and_carries_run() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "b.bin", b"ok\nbad \xff\xfe byte\nok again");
    let v = json(&sluice(&["grep", "--json", "b.d", p(&f)]));
    assert_eq!(v["count"], 1);
    assert_eq!(v["matches"], serde_json::json!([{"offset": 3, "record": "bad \\xff\\xfe byte"}]));
    assert_eq!(v["run"]["bytes_read"].as_u64(), Some(23));
    let v = json(&sluice(&["grep", "--json", "-c", "ok", p(&f)]));
    assert_eq!(v["count"], 2);
    assert!(v.get("matches").is_none());
    // No match: still one JSON object, exit status 1.
    let o = sluice(&["grep", "--json", "zzz", p(&f)]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((v["count"].as_u64(), v["matches"].as_array().map(Vec::len)), (Some(0), Some(0)));
}

#[test]
fn grep_two_runs_give_identical_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (0..50_000).map(|i| format!("row {i} value {}\n", i * 31 % 997)).collect();
    let f = write(dir.path(), "rows.txt", text.as_bytes());
    let run = || sluice(&["grep", "value 9[0-9]", p(&f), "--block-size", "64K"]).stdout;
    let first = run();
    assert!(!first.is_empty());
    assert_eq!(first, run());
}

#[test]
fn grep_bad_input_exits_2_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "t.txt", b"abc\n");
    assert_fails(&sluice(&["grep", "a", p(&f), "--record-size", "0"]), &["record_size"]);
    assert_fails(&sluice(&["grep", "a(", p(&f)]), &["bad pattern", "a("]);
    assert_fails(&sluice(&["grep", "a", p(&dir.path().join("none.txt"))]), &["none.txt"]);
    // A directory is searched recursively (issue 16 item 10), as `grep -r` does.
    let o = sluice(&["grep", "-c", "a", p(dir.path())]);
    assert_eq!((o.status.code(), stdout(&o)), (Some(0), format!("{}:1\n", p(&f))));
    assert_fails(&sluice(&["grep", "a", p(&f), "--hint", "colour=1"]), &["colour"]);
    assert_fails(&sluice(&["grep", "a", p(&f), "--hint", "noequals"]), &["noequals"]);
}

#[test]
fn unreadable_file_exits_2() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "secret.txt", b"abc\n");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::File::open(&f).is_ok() {
        eprintln!("skipping: this user (root?) can read a mode-000 file, so it is not unreadable");
        return;
    }
    assert_fails(&sluice(&["grep", "a", p(&f)]), &["secret.txt", "denied"]);
    assert_fails(&sluice(&["stats", p(&f), "--dtype", "u8"]), &["secret.txt", "denied"]);
}

#[test]
fn injected_read_error_exits_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "big.u8", &vec![7u8; 1 << 20]);
    let env = [("SLUICE_INJECT_READ_ERROR", "300000")];
    let o = sluice_env(&["stats", p(&f), "--dtype", "u8", "--block-size", "64K"], &env);
    if o.status.code() == Some(0) {
        eprintln!("skipping: SLUICE_INJECT_READ_ERROR is not honoured by this sluice-io yet");
        return;
    }
    assert_fails(&o, &["big.u8"]);
    let o = sluice_env(&["grep", "-c", "x", p(&f), "--block-size", "64K"], &env);
    assert_fails(&o, &["big.u8"]);
}

#[test]
fn too_small_memory_budget_is_an_error_before_work() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "x.u8", &[1, 2, 3]);
    let o = sluice(&[
        "stats",
        p(&f),
        "--dtype",
        "u8",
        "--bins",
        "100000000",
        "--range",
        "0,1",
        "--memory",
        "256M",
    ]);
    assert_fails(&o, &["histogram", "memory budget"]);
}

/// `grep -m`: once a file's output is complete, a read fault past the lines printed does not
/// fail the run (GNU grep stops reading there; `SLUICE_INJECT_READ_ERROR`); with a larger NUM
/// the fault is reached and reported, which shows the fault is there. That the pass really
/// stops reading is `test_grep_max_count_stops_reading` in `tests/python/test_stats_grep.py`.
#[test]
fn grep_max_count_ignores_faults_past_its_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("big.txt");
    let mut text = b"needle one\nhay\nneedle two\n".to_vec();
    let line = [b'x'; 99].iter().chain(b"\n").copied().collect::<Vec<u8>>();
    for _ in 0..80_000 {
        text.extend_from_slice(&line);
    }
    text.extend_from_slice(b"needle last\n");
    std::fs::write(&f, &text).unwrap();
    let path = f.to_str().unwrap();
    let fault = [("SLUICE_INJECT_READ_ERROR", "7000000")];
    let blocks = ["--block-size", "64K", "--direct", "never"];
    let o = sluice_env(
        &[&["grep", "-m", "1", "-A", "1", "-n", "needle", path][..], &blocks].concat(),
        &fault,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "1:needle one\n2-hay\n");
    let o = sluice_env(&[&["grep", "-m", "2", "needle", path][..], &blocks].concat(), &fault);
    assert_eq!((o.status.code(), stdout(&o)), (Some(0), "needle one\nneedle two\n".into()));
    let o = sluice_env(&[&["grep", "-m", "3", "needle", path][..], &blocks].concat(), &fault);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("Input/output error"), "{}", stderr(&o));
}
