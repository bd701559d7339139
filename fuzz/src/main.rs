//! `sluice-fuzz`: fuzzes every input parser of Sluice on stable Rust (issue 17, "the campaign").
//!
//! A structured, coverage-free mutator (see [`mutate`]) seeded with the test data of
//! `../shared/datasets` and hand-made valid inputs, run in-process: each execution calls the
//! library's parser entry point on a mutated input and catches a panic as a crash. Inputs that
//! end in an error message not seen before join the corpus (a cheap stand-in for coverage:
//! a new message is a new rejection path). libFuzzer (cargo-fuzz) needs a nightly toolchain
//! and AFL++ is not installed here; this driver needs neither.
//!
//! ```text
//! sluice-fuzz [--seconds S] [--execs N] [--seed K] [--out DIR] [TARGET...]
//! sluice-fuzz --seeds DIR     (writes DIR/TARGET/seed-N: corpora for fuzz/libfuzzer)
//! ```
//! Prints one line per target: executions, crashes (distinct panic messages), corpus size, rate.
//! Each crashing input is written to `DIR/crashes/TARGET-N.bin` with its message beside it.
//! Exit status 1 if any target crashed. A parser that aborts the process (an allocation failure)
//! leaves its input in the scratch directory printed at the start.

mod mutate;

use sluice_fuzz::{seeds, targets};

use std::collections::{BTreeMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use mutate::{Rng, mutate};
use targets::{Ctx, TARGETS, Target};

/// The message of the last panic in a target, recorded by the hook instead of printed.
static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

/// True while a target runs: the hook records its panics; others (the driver's) it prints.
static IN_TARGET: AtomicBool = AtomicBool::new(false);

/// Corpus inputs kept per target.
const MAX_CORPUS: usize = 4096;

struct Options {
    seconds: f64,
    execs: u64,
    seed: u64,
    out: PathBuf,
    targets: Vec<String>,
}

fn parse_args() -> anyhow::Result<Options> {
    let mut o = Options {
        seconds: 10.0,
        execs: u64::MAX,
        seed: 17,
        out: PathBuf::from("target/fuzz"),
        targets: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--seconds" => o.seconds = value()?.parse().context("--seconds")?,
            "--execs" => o.execs = value()?.parse().context("--execs")?,
            "--seed" => o.seed = value()?.parse().context("--seed")?,
            "--out" => o.out = PathBuf::from(value()?),
            "--seeds" => {
                // A libFuzzer corpus: DIR/TARGET/seed-N for every target (fuzz/libfuzzer).
                let dir = PathBuf::from(value()?);
                for t in TARGETS {
                    sluice_fuzz::write_seeds(t.name, &dir.join(t.name))?;
                    sluice_fuzz::write_dict(t.name, &dir.join(format!("{}.dict", t.name)))?;
                }
                std::process::exit(0);
            }
            "--list" => {
                TARGETS.iter().for_each(|t| println!("{}", t.name));
                std::process::exit(0);
            }
            t if TARGETS.iter().any(|x| x.name == t) => o.targets.push(t.to_string()),
            other => bail!("unknown argument {other:?} (targets: see --list)"),
        }
    }
    Ok(o)
}

/// An error chain with its digits and quoted text removed, cut to 80 characters: inputs that
/// fail the same way (whatever the token or number) share it.
fn class(e: &anyhow::Error) -> String {
    let mut out = String::new();
    let mut quoted = false;
    for c in format!("{e:#}").chars() {
        match c {
            '"' | '\'' | '`' => quoted = !quoted,
            _ if quoted || c.is_ascii_digit() => {}
            _ => out.push(c),
        }
    }
    out.chars().take(80).collect()
}

struct Outcome {
    execs: u64,
    crashes: u64,
    distinct: BTreeMap<String, usize>,
    corpus: usize,
    seconds: f64,
}

fn fuzz(t: &Target, ctx: &Ctx, o: &Options, shared: &std::path::Path) -> anyhow::Result<Outcome> {
    let mut corpus = seeds::seeds(t.name, shared);
    if corpus.is_empty() {
        corpus.push(Vec::new());
    }
    let crash_dir = o.out.join("crashes");
    let mut rng = Rng::new(
        o.seed ^ t.name.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b))),
    );
    let mut seen: HashSet<String> = HashSet::new();
    let mut out =
        Outcome { execs: 0, crashes: 0, distinct: BTreeMap::new(), corpus: 0, seconds: 0.0 };
    let start = Instant::now();
    let limit = Duration::from_secs_f64(o.seconds);
    // Seeds first, unmutated; then mutants of random corpus inputs.
    let mut pending: Vec<Vec<u8>> = corpus.iter().rev().cloned().collect();
    while out.execs < o.execs && (!out.execs.is_multiple_of(64) || start.elapsed() < limit) {
        let input = pending.pop().unwrap_or_else(|| {
            let a = &corpus[rng.below(corpus.len())];
            let b = &corpus[rng.below(corpus.len())];
            mutate(&mut rng, a, t.dict, b, t.max_len)
        });
        out.execs += 1;
        IN_TARGET.store(true, Ordering::Relaxed);
        let result = catch_unwind(AssertUnwindSafe(|| (t.run)(ctx, &input)));
        IN_TARGET.store(false, Ordering::Relaxed);
        match result {
            Ok(Ok(())) => {
                if seen.insert("ok".into()) && corpus.len() < MAX_CORPUS {
                    corpus.push(input);
                }
            }
            Ok(Err(e)) => {
                if seen.insert(class(&e)) && corpus.len() < MAX_CORPUS {
                    corpus.push(input);
                }
            }
            Err(_) => {
                out.crashes += 1;
                let msg = LAST_PANIC.lock().map(|m| m.clone()).unwrap_or_default();
                let n = out.distinct.len();
                if let std::collections::btree_map::Entry::Vacant(slot) = out.distinct.entry(msg) {
                    std::fs::create_dir_all(&crash_dir)?;
                    let base = crash_dir.join(format!("{}-{n}", t.name));
                    std::fs::write(base.with_extension("bin"), &input)?;
                    std::fs::write(base.with_extension("txt"), slot.key())?;
                    eprintln!(
                        "{}: crash {n}: {} (input {}.bin)",
                        t.name,
                        slot.key(),
                        base.display()
                    );
                    slot.insert(n);
                }
            }
        }
    }
    out.corpus = corpus.len();
    out.seconds = start.elapsed().as_secs_f64();
    Ok(out)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("sluice-fuzz: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run() -> anyhow::Result<bool> {
    let o = parse_args()?;
    std::panic::set_hook(Box::new(|info| {
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line()));
        let msg = format!("{}{}", payload(info), at.unwrap_or_default());
        if !IN_TARGET.load(Ordering::Relaxed) {
            eprintln!("sluice-fuzz: driver panicked: {msg}");
        } else if let Ok(mut m) = LAST_PANIC.lock() {
            *m = msg;
        }
    }));
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let shared = root.join("../shared/datasets");
    let scratch = tempfile::Builder::new().prefix("sluice-fuzz-").tempdir_in(scratch_parent())?;
    eprintln!("scratch directory: {}", scratch.path().display());
    let ctx = Ctx::new(scratch.path().to_path_buf(), &shared)?;
    let chosen: Vec<&Target> = TARGETS
        .iter()
        .filter(|t| o.targets.is_empty() || o.targets.iter().any(|n| n == t.name))
        .collect();
    println!(
        "{:<16} {:>12} {:>8} {:>7} {:>10}",
        "target", "executions", "crashes", "corpus", "exec/s"
    );
    let mut clean = true;
    for t in chosen {
        let r = fuzz(t, &ctx, &o, &shared)?;
        clean &= r.crashes == 0;
        println!(
            "{:<16} {:>12} {:>8} {:>7} {:>10.0}{}",
            t.name,
            r.execs,
            r.crashes,
            r.corpus,
            r.execs as f64 / r.seconds.max(1e-9),
            if r.distinct.is_empty() {
                String::new()
            } else {
                format!("  ({} distinct)", r.distinct.len())
            }
        );
    }
    Ok(clean)
}

/// The panic's message (`PanicHookInfo::payload_as_str` needs Rust 1.91; the MSRV is 1.85).
fn payload<'a>(info: &'a std::panic::PanicHookInfo<'_>) -> &'a str {
    let p = info.payload();
    p.downcast_ref::<&str>()
        .copied()
        .or_else(|| p.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("panic")
}

/// A RAM-backed directory for the scratch files when there is one.
fn scratch_parent() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    if shm.is_dir() { shm } else { std::env::temp_dir() }
}
