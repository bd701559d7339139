//! `graph info` and `graph verify` take `--memory` like every subcommand (issue 17 item 13) and
//! stay within it: `verify` on a store whose vertex arrays exceed the budget refuses, naming the
//! smallest budget, and runs at that budget with its peak RSS (read with `wait4(2)`) at most the
//! budget plus 64 MiB; a bad `--memory` is an error naming the flag.

use std::io::Read;
use std::process::{Command, Stdio};

/// Runs sluice with `args`; returns (exit code, stdout and stderr, peak RSS in bytes).
#[allow(clippy::zombie_processes)] // reaped by `wait4` below, which also gives its rusage
fn sluice_rss(args: &[&str]) -> (Option<i32>, String, u64) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run sluice");
    let mut text = String::new();
    child.stdout.take().unwrap().read_to_string(&mut text).unwrap();
    child.stderr.take().unwrap().read_to_string(&mut text).unwrap();
    let mut status = 0;
    // SAFETY: a zeroed `rusage` is a valid value for `wait4` to overwrite.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `status` and `ru` are valid and writable; the pid is our unreaped child.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut ru) };
    assert_eq!(pid, child.id() as libc::pid_t, "wait4");
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    (code, text, ru.ru_maxrss as u64 * 1024)
}

#[test]
fn info_and_verify_take_memory_and_verify_stays_within_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    // Scale 20, one edge per vertex, weighted: ~0.5 M vertices, whose ids and degrees (plus the
    // degrees verify counts) need more than a 20 MiB budget.
    let (code, text, _) = sluice_rss(&[
        "graph",
        "gen",
        "--scale",
        "20",
        "--edge-factor",
        "1",
        "--weights",
        "-o",
        &d("k.bin"),
    ]);
    assert_eq!(code, Some(0), "{text}");
    let import =
        ["graph", "import", "--format", "bin", "--weight", "f32", "--directed", "--memory", "128M"];
    let (code, text, _) = sluice_rss(&[&import[..], &[&d("k.bin"), "-o", &d("k.grid")]].concat());
    assert_eq!(code, Some(0), "{text}");
    let store = d("k.grid");

    let (code, text, _) = sluice_rss(&["graph", "info", &store, "--memory", "20M"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("weighted       true"), "{text}");
    for bad in ["lots", "0"] {
        let (code, text, _) = sluice_rss(&["graph", "verify", &store, "--memory", bad]);
        assert_eq!(code, Some(2), "{text}");
        assert!(text.contains("--memory"), "{text}");
        let (code, text, _) = sluice_rss(&["graph", "info", &store, "--memory", bad]);
        assert_eq!(code, Some(2), "{text}");
        assert!(text.contains("--memory"), "{text}");
    }

    // Too small: a refusal naming what it needs and the smallest budget, before reading.
    let (code, text, _) = sluice_rss(&["graph", "verify", &store, "--memory", "20M"]);
    assert_eq!(code, Some(2), "{text}");
    assert!(!text.contains("panicked"), "{text}");
    let at = text.find("needs --memory ").expect("the smallest budget") + "needs --memory ".len();
    let mib: u64 = text[at..at + text[at..].find('M').unwrap()].parse().unwrap();
    assert!(mib > 20, "{text}");
    // That budget works, within it.
    let memory = format!("{mib}M");
    let (code, text, rss) = sluice_rss(&["graph", "verify", &store, "--memory", &memory]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.starts_with("ok: "), "{text}");
    assert!(rss <= (mib << 20) + (64 << 20), "verify peak RSS {} MiB at {memory}", rss >> 20);
}
