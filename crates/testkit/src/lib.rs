//! sluice-testkit: seeded data generators for the demo and the tests (`publish = false`).
//!
//! * [`SplitMix`]: a small, fast, seeded generator (SplitMix64), so generated data needs no
//!   dependency and is the same on every machine.
//! * [`generate_npy`]: a `.npy` of f64 values in [0, 1) with NaNs at fixed places.
//! * [`generate_records`]: newline-terminated text records with a planted pattern.
//! * [`ldbc_properties`], [`assert_error`], [`output_text`], [`output_with_peak_rss`]: what the
//!   CLI's black-box tests share (reading an LDBC `.properties` file, checking a failed run,
//!   a child's own peak RSS).
//!
//! The same seed gives the same bytes, always: tests and the demo may state exact answers.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};

/// SplitMix64 (Steele, Lea and Flood, OOPSLA 2014): `next_u64` walks a Weyl sequence and mixes it.
#[derive(Debug, Clone)]
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Writes `n` f64 values, uniform in [0, 1) with every 1000th a NaN (the 1000th, 2000th, ...),
/// as a version 1.0 `.npy` file (`<f8`, shape `(n,)`), seed 42. Adds the bytes of values
/// written to `progress` as it goes.
pub fn generate_npy(path: &Path, n: u64, progress: Option<&AtomicU64>) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    out.write_all(&sluice_io::npy_header("'<f8'", &[n], false))?;
    let mut rng = SplitMix(42);
    let mut chunk = Vec::with_capacity(1 << 16);
    let mut i = 0u64;
    while i < n {
        chunk.clear();
        for _ in 0..(n - i).min(8192) {
            let x = if i % 1000 == 999 {
                f64::NAN
            } else {
                (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
            };
            chunk.extend_from_slice(&x.to_le_bytes());
            i += 1;
        }
        out.write_all(&chunk)?;
        if let Some(p) = progress {
            p.fetch_add(chunk.len() as u64, Ordering::Relaxed);
        }
    }
    out.flush()
}

/// Writes `size / 128` lines of 127 letters b..z, `aaaaa` planted in about 1.3 % of them, seed
/// 7; returns how many lines carry it. Adds the bytes written to `progress` as it goes.
pub fn generate_records(
    path: &Path,
    size: u64,
    progress: Option<&AtomicU64>,
) -> std::io::Result<u64> {
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let mut rng = SplitMix(7);
    let mut planted = 0;
    let mut line = [0u8; 128];
    for _ in 0..size / 128 {
        for b in &mut line[..127] {
            *b = b'b' + (rng.next_u64() % 25) as u8;
        }
        line[127] = b'\n';
        if rng.next_u64() % 1000 < 13 {
            let at = (rng.next_u64() % 122) as usize;
            line[at..at + 5].copy_from_slice(b"aaaaa");
            planted += 1;
        }
        out.write_all(&line)?;
        if let Some(p) = progress {
            p.fetch_add(128, Ordering::Relaxed);
        }
    }
    out.flush()?;
    Ok(planted)
}

/// An LDBC `.properties` file as `key → value`, each key without its `graph.<name>.` prefix
/// (`graph.g.bfs.source-vertex` → `bfs.source-vertex`); `#` lines are comments.
pub fn ldbc_properties(path: &Path) -> HashMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| {
            let k = k.trim();
            (k.splitn(3, '.').nth(2).unwrap_or(k).to_string(), v.trim().to_string())
        })
        .collect()
}

/// A run's standard output then standard error, for assertion messages.
pub fn output_text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// GNU time's line in a child's standard error: this prefix, then the peak RSS in KiB.
const PEAK_MARK: &str = "sluice-testkit peak-rss-kib ";

/// Runs `cmd` (program, arguments, directory and environment) under GNU time, `/usr/bin/time`,
/// and returns its output, with GNU time's line taken out of the standard error, and the child's
/// own peak RSS in bytes.
///
/// Not the `ru_maxrss` of `wait4(2)` or `getrusage(RUSAGE_CHILDREN)` for a child spawned here:
/// at `exec` Linux folds the old address space's high-water mark into the new program's, and
/// std spawns with `posix_spawn`, a vfork whose old address space is this process's, so a child
/// of a test process that once held 477 MiB reads at least 477 MiB (CI, stop 20). GNU time
/// forks its child from its own ~2 MiB. Panics if GNU time is missing (`apt-get install time`;
/// `.ci/run` installs it).
pub fn output_with_peak_rss(cmd: &Command) -> (Output, u64) {
    let mut timed = Command::new("/usr/bin/time");
    timed.args(["-f", &format!("{PEAK_MARK}%M")]).arg(cmd.get_program()).args(cmd.get_args());
    if let Some(dir) = cmd.get_current_dir() {
        timed.current_dir(dir);
    }
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => timed.env(key, value),
            None => timed.env_remove(key),
        };
    }
    let mut out = timed.output().expect("run /usr/bin/time (GNU time: apt-get install time)");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let at = err.rfind(PEAK_MARK).unwrap_or_else(|| panic!("no GNU time line in: {err}"));
    let kib: u64 = err[at + PEAK_MARK.len()..].trim().parse().expect("GNU time's %M");
    out.stderr.truncate(at);
    (out, kib * 1024)
}

/// Asserts that a run failed cleanly: exit status 2, no panic, and every one of `needles` in
/// its standard error.
#[track_caller]
pub fn assert_error(out: &Output, needles: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "expected exit 2: {}", output_text(out));
    assert!(!err.contains("panicked"), "panic: {err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} not in {err:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_childs_peak_rss_is_its_own_not_its_parents() {
        // This process holds 256 MiB; the child reads a few bytes and exits.
        let held = vec![1u8; 256 << 20];
        let touched: u64 = held.iter().step_by(4096).map(|&b| u64::from(b)).sum();
        assert_eq!(touched, (256 << 20) / 4096);
        let (out, rss) =
            output_with_peak_rss(Command::new("head").args(["-c", "3", "/proc/self/status"]));
        assert!(out.status.success(), "{}", output_text(&out));
        assert_eq!(out.stdout, b"Nam", "GNU time's line is not in stdout");
        assert!(out.stderr.is_empty(), "GNU time's line is taken out: {}", output_text(&out));
        assert!(rss > 0 && rss < 64 << 20, "peak RSS {rss} bytes: the parent's 256 MiB counted");
        drop(held);
    }

    #[test]
    fn splitmix_matches_the_reference_sequence() {
        // SplitMix64 seeded with 0 (the reference C code of Vigna's `splitmix64.c`).
        let mut r = SplitMix(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn generated_files_have_the_promised_shape() {
        let dir = std::env::temp_dir().join(format!("sluice-testkit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let npy = dir.join("a.npy");
        let counter = AtomicU64::new(0);
        generate_npy(&npy, 2500, Some(&counter)).unwrap();
        let bytes = std::fs::read(&npy).unwrap();
        assert_eq!(bytes.len(), 128 + 2500 * 8);
        assert_eq!(counter.load(Ordering::Relaxed), 2500 * 8);
        let at = |i: usize| f64::from_le_bytes(bytes[128 + i * 8..][..8].try_into().unwrap());
        assert!(at(999).is_nan() && at(1999).is_nan());
        assert!((0..2500).filter(|&i| i % 1000 != 999).all(|i| (0.0..1.0).contains(&at(i))));
        let txt = dir.join("r.txt");
        let planted = generate_records(&txt, 128 * 1000, None).unwrap();
        let text = std::fs::read_to_string(&txt).unwrap();
        assert_eq!(text.lines().filter(|l| l.contains("aaaaa")).count() as u64, planted);
        assert!(text.lines().all(|l| l.len() == 127));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn properties_lose_their_graph_prefix() {
        let dir = std::env::temp_dir().join(format!("sluice-testkit-p-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("g.properties");
        std::fs::write(&p, "# c\ngraph.g.bfs.source-vertex = 7\ngraph.g.directed=true\n").unwrap();
        let props = ldbc_properties(&p);
        assert_eq!(props["bfs.source-vertex"], "7");
        assert_eq!(props["directed"], "true");
        assert_eq!(props.len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
