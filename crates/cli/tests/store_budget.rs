//! `graph info` and `graph verify` take `--memory` like every subcommand (issue 17 item 13) and
//! stay within it: `verify` on a store whose vertex arrays exceed the budget refuses, naming the
//! smallest budget, and runs at that budget with its peak RSS (read with GNU time) at most the
//! budget; a bad `--memory` is an error naming the flag.

use std::process::Command;

use sluice_testkit::{output_text, output_with_peak_rss};

/// Runs sluice with `args`; returns (exit code, stdout and stderr, its own peak RSS in bytes).
fn sluice_rss(args: &[&str]) -> (Option<i32>, String, u64) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
    cmd.args(args);
    let (out, rss) = output_with_peak_rss(&cmd);
    (out.status.code(), output_text(&out), rss)
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
    assert!(rss <= mib << 20, "verify peak RSS {} MiB at {memory}", rss >> 20);
}

/// The subcommands `sluice HELP_PATH --help` lists (clap's own list, not one kept here).
fn subcommands(path: &[&str]) -> Vec<String> {
    let (code, text, _) = sluice_rss(&[path, &["--help"]].concat());
    assert_eq!(code, Some(0), "{text}");
    text.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}

// Every subcommand, tools included, takes `--memory` (gen, partition, validate and bsp probe
// once did not: "unexpected argument '--memory'").
#[test]
fn every_subcommand_takes_memory() {
    let mut leaves = Vec::new();
    for top in subcommands(&[]) {
        let nested = subcommands(&[&top]);
        if nested.is_empty() {
            leaves.push(vec![top]);
        } else {
            leaves.extend(nested.into_iter().map(|c| vec![top.clone(), c]));
        }
    }
    assert!(leaves.len() >= 20, "{leaves:?}");
    for leaf in leaves {
        let args: Vec<&str> = leaf.iter().map(String::as_str).chain(["--help"]).collect();
        let (code, text, _) = sluice_rss(&args);
        assert_eq!(code, Some(0), "{leaf:?}: {text}");
        assert!(text.contains("--memory <SIZE>"), "{leaf:?} takes no --memory");
    }
}

/// The smallest budget a refusal names ("needs --memory N M at least").
fn smallest(text: &str) -> u64 {
    let at = text.find("needs --memory ").expect("the smallest budget") + "needs --memory ".len();
    text[at..at + text[at..].find('M').unwrap()].parse().unwrap()
}

// gen, partition and validate hold memory of their own: each refuses a budget too small with
// the smallest that works, and runs at that budget within it (peak RSS ≤ budget; session 15
// measured gen 45 of 56 MiB, partition 11 of 24, validate 142 of 180, verify 13 of 31).
#[test]
fn gen_partition_and_validate_stay_within_memory() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let generate = |memory: &str| {
        sluice_rss(&[
            "graph",
            "gen",
            "--scale",
            "21",
            "--edge-factor",
            "2",
            "-o",
            &d("k.bin"),
            "--memory",
            memory,
        ])
    };
    // A permutation of 2^21 vertices (8 MiB) and a batch of chunk buffers: more than 20 MiB.
    let (code, text, _) = generate("20M");
    assert_eq!(code, Some(2), "{text}");
    let mib = smallest(&text);
    assert!(mib > 20, "{text}");
    let (code, text, rss) = generate(&format!("{mib}M"));
    assert_eq!(code, Some(0), "{text}");
    assert!(rss <= mib << 20, "gen peak RSS {} MiB at {mib}M", rss >> 20);

    let import = ["graph", "import", "--format", "bin", "--directed", "--memory", "128M"];
    let (code, text, _) = sluice_rss(&[&import[..], &[&d("k.bin"), "-o", &d("k.grid")]].concat());
    assert_eq!(code, Some(0), "{text}");
    let (code, text, rss) = sluice_rss(&[
        "graph",
        "partition",
        &d("k.grid"),
        "--ranks",
        "3",
        "-o",
        &d("p"),
        "--memory",
        "24M",
    ]);
    assert_eq!(code, Some(0), "{text}");
    assert!(rss <= 24 << 20, "partition peak RSS {} MiB at 24M", rss >> 20);
    let (code, text, _) = sluice_rss(&["graph", "verify", &d("p/part-0002"), "--memory", "128M"]);
    assert_eq!(code, Some(0), "{text}");

    // Validate an output of some 670 000 lines (every vertex with an edge) against itself.
    let (code, text, _) = sluice_rss(&[
        "graph",
        "pagerank",
        &d("k.grid"),
        "--iterations",
        "2",
        "-o",
        &d("pr.txt"),
        "--memory",
        "256M",
    ]);
    assert_eq!(code, Some(0), "{text}");
    let validate = |memory: &str| {
        sluice_rss(&[
            "graph",
            "validate",
            &d("pr.txt"),
            &d("pr.txt"),
            "--algorithm",
            "pr",
            "--memory",
            memory,
        ])
    };
    let (code, text, _) = validate("32M");
    assert_eq!(code, Some(2), "{text}");
    let mib = smallest(&text);
    // A refusal names what one step needs; a later step may need more: step up until it runs.
    let mut budget = mib;
    let (code, text, rss) = loop {
        let (code, text, rss) = validate(&format!("{budget}M"));
        if code != Some(2) || !text.contains("needs --memory") {
            break (code, text, rss);
        }
        budget = smallest(&text);
    };
    assert_eq!(code, Some(0), "{text}");
    assert!(text.starts_with("ok"), "{text}");
    assert!(rss <= budget << 20, "validate peak RSS {} MiB at {budget}M", rss >> 20);
}
