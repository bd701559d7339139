//! Distributed stats on the threads backend (each BSP process a thread with its own pipeline):
//! the figures equal one process's bit for bit (`dist` rule 2), and a failure on one process
//! fails all of them, naming the rank and the file (rule 3).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rand::{Rng, SeedableRng};
use sluice_bsp::{Args, ExecConfig, exec_with};
use sluice_io::{Budget, PipelineBuilder};

use super::{Dataset, stats};
use crate::{Error, StatsConfig};

/// Runs distributed stats on `p` threads; returns each process's figures as JSON, or its error.
fn run(p: u32, dataset: &Dataset, config: &StatsConfig) -> Vec<Result<String, String>> {
    let out = Mutex::new(vec![None; p as usize]);
    // Checked: the collectives' puts are checked for overlaps too.
    exec_with(
        &ExecConfig::new(p, true),
        p,
        |ctx, s, _, _| {
            let pipeline = PipelineBuilder::new().block_size(4096).build().unwrap();
            let r = stats(ctx, dataset, config, &pipeline, &Budget::unlimited());
            let r = r
                .map(|rep| serde_json::to_string(&rep.figures).unwrap())
                .map_err(|e| format!("{:#}", anyhow_like(&e)));
            out.lock().unwrap()[s as usize] = Some(r);
        },
        Args::none(),
    )
    .unwrap();
    out.into_inner().unwrap().into_iter().map(Option::unwrap).collect()
}

/// The error and its causes, as the CLI prints them.
fn anyhow_like(e: &Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(c) = source {
        text = format!("{text}: {c}");
        source = c.source();
    }
    text
}

fn single(path: &Path, config: &StatsConfig) -> String {
    let pipeline = PipelineBuilder::new().block_size(4096).build().unwrap();
    let report = crate::stats::stats(path, config, &pipeline, &Budget::unlimited()).unwrap();
    serde_json::to_string(&report.figures).unwrap()
}

/// `n` f64 values with a wide range of magnitudes (so that the bracketing of sums shows in the
/// last bits) and some NaNs.
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            if i % 97 == 0 {
                f64::NAN
            } else {
                rng.r#gen::<f64>() * 10f64.powi(rng.gen_range(-3..9))
            }
        })
        .collect()
}

fn write_npy(path: &Path, vals: &[f64]) {
    let dtype = crate::Dtype::new(crate::Scalar::F64, crate::Endian::Little);
    let mut bytes = crate::npy::write_header(dtype, &[vals.len() as u64], false);
    bytes.extend(vals.iter().flat_map(|v| v.to_le_bytes()));
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn shared_file_stats_equal_one_process_bit_for_bit_on_1_to_6_processes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.npy");
    // 37 blocks of 4096 bytes (the header shifts the data by 128): more blocks than processes,
    // but not a multiple of any of them.
    write_npy(&path, &values(37 * 512 - 40, 1));
    let config = StatsConfig::from_hints(&[("bins", "7"), ("range", "0,1e6")]).unwrap();
    let want = single(&path, &config);
    for p in 1..=6 {
        for got in run(p, &Dataset::Shared(path.clone()), &config) {
            assert_eq!(got.unwrap(), want, "p = {p}");
        }
    }
}

#[test]
fn more_processes_than_blocks_still_agree() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.f64");
    let vals = values(700, 2);
    std::fs::write(&path, vals.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    let config = StatsConfig::from_hints(&[("dtype", "f64")]).unwrap();
    let want = single(&path, &config);
    for got in run(5, &Dataset::Shared(path.clone()), &config) {
        assert_eq!(got.unwrap(), want);
    }
}

fn parts(dir: &Path, sizes: &[usize]) -> (Vec<PathBuf>, Vec<f64>) {
    let mut all = Vec::new();
    let mut paths = Vec::new();
    for (i, &n) in sizes.iter().enumerate() {
        let vals = values(n, 10 + i as u64);
        let path = dir.join(format!("data.part-{i:04}"));
        write_npy(&path, &vals);
        all.extend(vals);
        paths.push(path);
    }
    (paths, all)
}

#[test]
fn parts_give_the_same_bits_on_any_process_count_and_match_the_whole_array() {
    let dir = tempfile::tempdir().unwrap();
    let (paths, all) = parts(dir.path(), &[3000, 0, 5000, 1234]);
    let config = StatsConfig::default();
    let one = run(1, &Dataset::Parts(paths.clone()), &config).pop().unwrap().unwrap();
    for p in 2..=5 {
        for got in run(p, &Dataset::Parts(paths.clone()), &config) {
            assert_eq!(got.unwrap(), one, "p = {p}");
        }
    }
    // The parts' figures are the concatenated array's (counts exactly, sums to rounding).
    let whole = dir.path().join("whole.npy");
    write_npy(&whole, &all);
    let (a, b): (serde_json::Value, serde_json::Value) = (
        serde_json::from_str(&one).unwrap(),
        serde_json::from_str(&single(&whole, &config)).unwrap(),
    );
    for key in ["count", "nan_count", "min", "max"] {
        assert_eq!(a[key], b[key], "{key}");
    }
    for key in ["sum", "mean", "variance"] {
        let (x, y) = (a[key].as_f64().unwrap(), b[key].as_f64().unwrap());
        assert!((x - y).abs() <= 1e-12 * y.abs(), "{key}: {x} vs {y}");
    }
}

#[test]
fn a_corrupt_part_fails_every_process_naming_the_rank_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (paths, _) = parts(dir.path(), &[100, 100, 100]);
    let bytes = std::fs::read(&paths[1]).unwrap();
    std::fs::write(&paths[1], &bytes[..bytes.len() - 3]).unwrap();
    let name = paths[1].display().to_string();
    let results = run(3, &Dataset::Parts(paths), &StatsConfig::default());
    for (rank, r) in results.into_iter().enumerate() {
        let err = r.unwrap_err();
        assert!(err.contains("rank 1") && err.contains(&name), "rank {rank}: {err}");
    }
}

/// Runs distributed grep on `p` threads; returns rank 0's listed matches and every rank's count.
fn run_grep(p: u32, path: &Path, config: &crate::GrepConfig) -> (Vec<(u64, Vec<u8>)>, Vec<u64>) {
    let pipeline = || PipelineBuilder::new().block_size(4096).build().unwrap();
    let (listed, reports) = run_grep_with(p, path, config, pipeline);
    (listed, reports.iter().map(|r| r.0).collect())
}

/// [`run_grep`] with the pipeline `pipeline` makes; every rank's (count, transfer, user copies).
#[allow(clippy::type_complexity)]
fn run_grep_with(
    p: u32,
    path: &Path,
    config: &crate::GrepConfig,
    pipeline: impl Fn() -> sluice_io::Pipeline + Sync,
) -> (Vec<(u64, Vec<u8>)>, Vec<(u64, super::Transfer, u64)>) {
    let listed = Mutex::new(Vec::new());
    let reports = Mutex::new(vec![(0, super::Transfer::default(), 0); p as usize]);
    exec_with(
        &ExecConfig::new(p, true),
        p,
        |ctx, s, _, _| {
            let mut mine = Vec::new();
            let report = super::grep(ctx, path, config, &pipeline(), &Budget::unlimited(), |m| {
                mine.push((m.offset, m.record.to_vec()));
                Ok(())
            })
            .unwrap();
            if s == 0 {
                *listed.lock().unwrap() = mine;
            } else {
                assert!(mine.is_empty(), "only rank 0 lists");
            }
            let copies = report.run.copies.user_copy_bytes;
            reports.lock().unwrap()[s as usize] = (report.count, report.transfer, copies);
        },
        Args::none(),
    )
    .unwrap();
    (listed.into_inner().unwrap(), reports.into_inner().unwrap())
}

/// Lines of `text` holding `needle`: (offset, line without its newline, bytes with it).
fn matching_lines(text: &[u8], needle: &[u8]) -> Vec<(u64, Vec<u8>, u64)> {
    let mut at = 0u64;
    let mut out = Vec::new();
    for line in text.split_inclusive(|&b| b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        if body.windows(needle.len()).any(|w| w == needle) {
            out.push((at, body.to_vec(), line.len() as u64));
        }
        at += line.len() as u64;
    }
    out
}

/// The first line start at or after byte `at` of `text` (rank stripes start there).
fn line_start_from(text: &[u8], at: usize) -> usize {
    if at == 0 {
        return 0;
    }
    text[at - 1..].iter().position(|&b| b == b'\n').map_or(text.len(), |i| at + i)
}

#[test]
fn grep_puts_dense_matches_from_the_pool_buffers_without_a_copy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.txt");
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let mut text = Vec::new();
    for i in 0..3000 {
        let n = rng.gen_range(0..200);
        text.extend((0..n).map(|_| b'a' + rng.gen_range(0..20u8)));
        if i % 3 != 0 {
            text.extend_from_slice(b"needle");
        }
        text.push(b'\n');
    }
    std::fs::write(&path, &text).unwrap();
    let truth = matching_lines(&text, b"needle");
    let config = crate::GrepConfig { count: false, ..crate::GrepConfig::new("needle") };
    // One read per rank, into a pool buffer (not a mapping): every block is held.
    let whole = || {
        let b = PipelineBuilder::new().block_size(1 << 20).mmap(false);
        b.direct(sluice_io::DirectMode::Never).build().unwrap()
    };
    for p in 1..=4u32 {
        let (listed, reports) = run_grep_with(p, &path, &config, whole);
        let want: Vec<_> = truth.iter().map(|(o, l, _)| (*o, l.clone())).collect();
        assert_eq!(listed, want, "p = {p}");
        let rank1 = line_start_from(&text, text.len() / p as usize) as u64;
        let sent: u64 = truth.iter().filter(|t| p > 1 && t.0 >= rank1).map(|t| t.2).sum();
        for (rank, (_, transfer, copies)) in reports.iter().enumerate() {
            let want = super::Transfer { zero_copy_sent_bytes: sent, copied_sent_bytes: 0 };
            assert_eq!((*transfer, *copies), (want, 0), "p = {p}, rank {rank}");
        }
    }
    // Small reads: seams and refused holds are copied, and counted; all bytes still arrive.
    let small = || PipelineBuilder::new().block_size(4096).mmap(false).build().unwrap();
    let (listed, reports) = run_grep_with(3, &path, &config, small);
    assert_eq!(listed.len(), truth.len());
    let rank1 = line_start_from(&text, text.len() / 3) as u64;
    let sent: u64 = truth.iter().filter(|t| t.0 >= rank1).map(|t| t.2).sum();
    let (_, transfer, copies) = reports[0];
    assert_eq!(transfer.zero_copy_sent_bytes + transfer.copied_sent_bytes, sent);
    assert!(transfer.zero_copy_sent_bytes > 0 && copies >= transfer.copied_sent_bytes);
}

#[test]
fn grep_lists_what_one_process_lists_in_file_order_on_1_to_6_processes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.txt");
    // Lines up to 9 KB (longer than a 4 KiB block and than some stripes), every 7th a match.
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let mut text = Vec::new();
    for i in 0..400 {
        let n = if i % 50 == 0 { 9000 } else { rng.gen_range(0..120) };
        text.extend((0..n).map(|_| b'a' + rng.gen_range(0..20u8)));
        if i % 7 == 0 {
            text.extend_from_slice(b"needle");
        }
        text.push(b'\n');
    }
    std::fs::write(&path, &text).unwrap();
    let config = crate::GrepConfig { count: false, ..crate::GrepConfig::new("needle") };
    let pipeline = PipelineBuilder::new().block_size(4096).build().unwrap();
    let want = crate::grep::grep(&path, &config, &pipeline, &Budget::unlimited()).unwrap();
    let want: Vec<(u64, Vec<u8>)> =
        want.matches.unwrap().into_iter().map(|m| (m.offset, m.record)).collect();
    // Independent truth: the lines of the text that contain the needle, with their offsets.
    let mut at = 0u64;
    let mut truth = Vec::new();
    for line in text.split_inclusive(|&b| b == b'\n') {
        let body = &line[..line.len() - 1];
        if body.windows(6).any(|w| w == b"needle") {
            truth.push((at, body.to_vec()));
        }
        at += line.len() as u64;
    }
    assert_eq!(want, truth);
    for p in 1..=6 {
        let (listed, counts) = run_grep(p, &path, &config);
        assert_eq!(listed, truth, "p = {p}");
        assert!(counts.iter().all(|&c| c == truth.len() as u64), "p = {p}: {counts:?}");
    }
}
