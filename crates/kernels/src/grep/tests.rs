//! Grep against a naive reference: the whole file in memory, cut into records with a plain loop,
//! each record searched alone with a regex built with default flags (so `^`/`$` are the record's
//! edges). It shares no search code with the kernel.

use proptest::prelude::*;
use regex::bytes::Regex;
use sluice_io::PipelineBuilder;

use super::*;

/// Cuts `data` into records the plain way (rule 1).
fn records(data: &[u8], record_size: Option<usize>) -> Vec<(u64, &[u8])> {
    let mut out = Vec::new();
    let mut start = 0;
    match record_size {
        Some(n) => {
            while start < data.len() {
                let end = (start + n).min(data.len());
                out.push((start as u64, &data[start..end]));
                start = end;
            }
        }
        None => {
            for (i, &b) in data.iter().enumerate() {
                if b == b'\n' {
                    out.push((start as u64, &data[start..i]));
                    start = i + 1;
                }
            }
            if start < data.len() {
                out.push((start as u64, &data[start..]));
            }
        }
    }
    out
}

/// (records matched, matches, listed records).
fn naive(data: &[u8], config: &GrepConfig) -> (u64, u64, Vec<(u64, Vec<u8>)>) {
    let pattern =
        if config.fixed_strings { regex::escape(&config.pattern) } else { config.pattern.clone() };
    let pattern = if config.ignore_case { format!("(?i){pattern}") } else { pattern };
    let re = Regex::new(&pattern).unwrap();
    let (mut n, mut m, mut list) = (0, 0, Vec::new());
    for (offset, record) in records(data, config.record_size) {
        let k = re.find_iter(record).count() as u64;
        if k > 0 {
            n += 1;
            m += k;
            list.push((offset, record.to_vec()));
        }
    }
    (n, m, list)
}

fn run(path: &Path, config: &GrepConfig, block_size: usize) -> GrepReport {
    run_on(path, config, block_size, 0)
}

fn run_on(path: &Path, config: &GrepConfig, block_size: usize, way: usize) -> GrepReport {
    let pipeline = crate::stats::tests::pipeline_on(block_size, way);
    grep(path, config, &pipeline, &Budget::unlimited()).unwrap()
}

fn check(data: &[u8], config: &GrepConfig, block_size: usize) {
    check_on(data, config, block_size, 0)
}

fn check_on(data: &[u8], config: &GrepConfig, block_size: usize, way: usize) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("g.txt");
    std::fs::write(&p, data).unwrap();
    let (n, m, list) = naive(data, config);
    for count_matches in [false, true] {
        let config = GrepConfig { count_matches, count: false, ..config.clone() };
        let r = run_on(&p, &config, block_size, way);
        let what = format!("{config:?} on {:?} (path {way})", String::from_utf8_lossy(data));
        assert_eq!(r.records_matched, n, "{what}");
        assert_eq!(r.count, if count_matches { m } else { n }, "{what}");
        assert_eq!(r.matches.as_deref().map(pairs), Some(list.clone()), "{what}");
    }
}

/// The (offset, bytes) of listed records.
fn pairs(found: &[RecordMatch]) -> Vec<(u64, Vec<u8>)> {
    found.iter().map(|m| (m.offset, m.record.clone())).collect()
}

fn config(pattern: &str) -> GrepConfig {
    GrepConfig::new(pattern)
}

#[test]
fn rule1_lines_last_line_without_newline_and_cr_is_ordinary() {
    let data = b"abc\r\nxbc\nabc";
    check(data, &config("abc"), 4096);
    check(data, &config("c$"), 4096);
    check(data, &config("\\r$"), 4096);
    check(b"", &config(""), 4096);
    check(b"\n\n", &config("^$"), 4096);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("e.txt");
    std::fs::write(&p, b"").unwrap();
    assert_eq!(run(&p, &config("x*"), 4096).count, 0, "an empty file has no records");
}

#[test]
fn rule1_record_size_zero_is_an_error_and_short_last_record_counts() {
    let err =
        GrepKernel::new(&GrepConfig { record_size: Some(0), ..config("a") }, Budget::unlimited())
            .unwrap_err();
    assert!(err.to_string().contains("record_size"), "{err}");
    let fixed = |p: &str| GrepConfig { record_size: Some(3), ..config(p) };
    check(b"abcdefgh", &fixed("gh"), 4096);
    check(b"abcdefgh", &fixed("^gh$"), 4096);
}

#[test]
fn rule2_a_match_never_crosses_a_record_boundary() {
    // Lines: patterns that can match '\n' in a block search.
    for p in ["a\\nb", "a\\sb", "[^x]+b", "a(?s:.)b", "\\Ab", "a\\z"] {
        check(b"xa\nbx\nab\n", &config(p), 4096);
    }
    // Fixed records: a literal or a regex across the seam between records.
    let fixed =
        |p: &str, f: bool| GrepConfig { record_size: Some(3), fixed_strings: f, ..config(p) };
    check(b"abcdefcde", &fixed("cd", true), 4096);
    check(b"abcdefcde", &fixed("cd", false), 4096);
    check(b"abcbcd", &fixed("^b", false), 4096);
    check(b"abcbcd", &fixed("c\\b", false), 4096);
}

#[test]
fn rule3_count_count_matches_and_offsets() {
    let data = b"aa aa\nb\naaaa\n";
    check(data, &config("aa"), 4096);
    check(data, &GrepConfig { fixed_strings: true, ..config("aa") }, 4096);
    check(data, &config("a*"), 4096);
    check(data, &GrepConfig { fixed_strings: true, ..config("") }, 4096);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.txt");
    std::fs::write(&p, data).unwrap();
    let r = run(&p, &GrepConfig { count_matches: true, ..config("aa") }, 4096);
    assert_eq!((r.count, r.records_matched, r.matches_total), (4, 2, Some(4)));
    let offsets: Vec<u64> = run(&p, &GrepConfig { count: false, ..config("a") }, 4096)
        .matches
        .unwrap()
        .iter()
        .map(|m| m.offset)
        .collect();
    assert_eq!(offsets, vec![0, 8]);
}

#[test]
fn rule4_literals_regexes_case_and_invalid_utf8() {
    let data = b"x.y\nxzy\n\xff\xfeA.B\nab\n";
    check(data, &GrepConfig { fixed_strings: true, ..config(".") }, 4096);
    check(data, &config("x.y"), 4096);
    check(data, &GrepConfig { ignore_case: true, ..config("a.b") }, 4096);
    check(data, &GrepConfig { ignore_case: true, fixed_strings: true, ..config("A.b") }, 4096);
    let err = GrepKernel::new(&config("a("), Budget::unlimited()).unwrap_err();
    assert!(matches!(err, Error::Pattern { .. }) && err.to_string().contains("a("), "{err}");
    assert_eq!(escape_bytes(b"a\xffb\xc3\xa9\\"), "a\\xffb\u{e9}\\");
}

#[test]
fn rule5_two_runs_give_identical_bytes() {
    let data: Vec<u8> = (0..20_000u32)
        .flat_map(|i| format!("line {i} {}\n", i * 7919 % 1000).into_bytes())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.txt");
    std::fs::write(&p, &data).unwrap();
    let c = GrepConfig { count: false, ..config("9[0-9]7") };
    let out = |r: GrepReport| serde_json::to_vec(&(r.count, r.matches)).unwrap();
    assert_eq!(out(run(&p, &c, 4096)), out(run(&p, &c, 4096)));
    assert_eq!(out(run(&p, &c, 4096)), out(run(&p, &c, 1 << 20)));
    for way in 0..5 {
        assert_eq!(out(run(&p, &c, 4096)), out(run_on(&p, &c, 4096, way)), "path {way}");
    }
}

#[test]
fn rule6_listed_matches_beyond_the_budget_are_an_error() {
    let data = vec![b'a'; 1 << 20];
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.txt");
    std::fs::write(&p, &data).unwrap();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let total = sluice_io::memory::BASELINE_BYTES + threads * MATCHER_CACHE_BYTES + 4096;
    let budget = Budget::new(total).unwrap();
    let pipeline = PipelineBuilder::new().block_size(65536).build().unwrap();
    let c = GrepConfig { record_size: Some(100), count: false, ..config("a") };
    let err = grep(&p, &c, &pipeline, &budget).unwrap_err();
    assert!(matches!(err, Error::Listing { .. }), "{err}");
    let chain = format!("{err}: {}", std::error::Error::source(&err).unwrap());
    assert!(chain.contains("big.txt") && chain.contains("matching records"), "{chain}");
    // Counting needs no such memory.
    let c = GrepConfig { count: true, ..c };
    assert_eq!(grep(&p, &c, &pipeline, &budget).unwrap().count, (1 << 20) / 100 + 1);
}

#[test]
fn grep_with_streams_in_file_order_and_stops_on_sink_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.txt");
    let data: Vec<u8> = (0..5000u32).flat_map(|i| format!("{i}\n").into_bytes()).collect();
    std::fs::write(&p, &data).unwrap();
    let pipeline = PipelineBuilder::new().block_size(4096).build().unwrap();
    let c = GrepConfig { count: false, ..config("7$") };
    let mut seen = Vec::new();
    let r = grep_with(&p, &c, &pipeline, &Budget::unlimited(), |m| {
        seen.push(m.offset);
        Ok::<(), Error>(())
    })
    .unwrap();
    assert_eq!(seen.len() as u64, r.count);
    assert!(seen.windows(2).all(|w| w[0] < w[1]));
    let mut calls = 0;
    let err = grep_with(&p, &c, &pipeline, &Budget::unlimited(), |_| {
        calls += 1;
        Err(Error::BadHint { hint: "sink".into() })
    })
    .unwrap_err();
    assert_eq!((calls, err.to_string().contains("sink")), (1, true));
}

#[test]
fn greedy_patterns_over_fixed_records_stay_linear() {
    // 8 MiB of 128-byte records without newlines, a third of them matching `a[b-z]*`: a
    // leftmost-longest candidate search would scan to the block's end for every one of them
    // (about 10^4 × 1 MiB per block); the earliest-end search stops at once.
    let mut data = Vec::with_capacity(8 << 20);
    for i in 0..(8 << 20) / 128 {
        let c = if i % 3 == 0 { b'a' } else { b'b' };
        data.extend(std::iter::repeat_n(b'b', 64).chain([c]).chain(std::iter::repeat_n(b'c', 63)));
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("greedy.bin");
    std::fs::write(&p, &data).unwrap();
    let c = GrepConfig { record_size: Some(128), ..config("a[b-z]*") };
    assert_eq!(run(&p, &c, 1 << 20).count, ((8u64 << 20) / 128).div_ceil(3));
    let c = GrepConfig { record_size: None, ..config("a[^x]*") };
    assert_eq!(run(&p, &c, 1 << 20).count, 1, "one long line");
}

#[test]
fn hints_set_the_same_fields_as_flags() {
    let mut c = config("x");
    c.apply_hints(&[("fixed-strings", "true"), ("record_size", "128"), ("count-matches", "yes")])
        .unwrap();
    assert!(c.fixed_strings && c.count_matches && c.record_size == Some(128));
    let err = c.apply_hints(&[("record_size", "big")]).unwrap_err().to_string();
    assert!(err.contains("record_size") && err.contains("big"), "{err}");
    let err = c.apply_hints(&[("colour", "1")]).unwrap_err().to_string();
    assert!(err.contains("colour") && err.contains("record_size"), "{err}");
}

const PATTERNS: &[&str] = &[
    "a", "ab", "b\\r", "^a", "a$", "^$", "a\\sb", "[^a]+b", "\\ba", "a\\b", "(ab|ba)+", "x*",
    "\\Aa", "",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Rules 1, 2 and 5: over random files of a, b, space, \r, \n, random block sizes and both
    /// layouts, the kernel finds exactly what the per-record reference finds.
    #[test]
    fn stitching_and_block_search_agree_with_the_reference(
        data in prop::collection::vec(prop::sample::select(b"aab \r\n\n".to_vec()), 0..20_000),
        pattern in prop::sample::select(PATTERNS),
        fixed in any::<bool>(),
        record_size in prop::option::of(1usize..300),
        k in 1usize..4,
        way in 0usize..5,
    ) {
        let c = GrepConfig {
            fixed_strings: fixed && !pattern.contains('\\'),
            record_size,
            ..config(pattern)
        };
        check_on(&data, &c, 4096 * k, way);
    }
}

/// Everything a printer gets from one pass: selected flag, line, offset, end, record, spans.
type Listed = Vec<(bool, u64, u64, u64, Vec<u8>, Vec<(u32, u32)>)>;

fn listed(found: &[RecordMatch]) -> Listed {
    found
        .iter()
        .map(|m| (m.selected, m.line, m.offset, m.end, m.record.clone(), m.spans.clone()))
        .collect()
}

/// GNU-format bytes of a pass over `path` with `block_size`, and the same through `grep_reader`.
fn printed(path: &Path, c: &GrepConfig, block_size: usize) -> (Vec<u8>, Vec<u8>) {
    let opts = gnu::GnuOptions {
        line_numbers: c.line_numbers,
        byte_offset: true,
        only_matching: c.only_matching,
        before: c.before_context,
        after: c.after_context,
        text: c.text,
        ..gnu::GnuOptions::default()
    };
    let pipeline = PipelineBuilder::new().block_size(block_size).build().unwrap();
    let mut a = gnu::GnuPrinter::new(Vec::new(), opts);
    a.start_file(Some(b"f"));
    grep_with(path, c, &pipeline, &Budget::unlimited(), |m| {
        a.record(m).map_err(|_| Error::BadHint { hint: "io".into() })
    })
    .unwrap();
    let mut b = gnu::GnuPrinter::new(Vec::new(), opts);
    b.start_file(Some(b"f"));
    let file = std::fs::File::open(path).unwrap();
    grep_reader(file, path, c, &Budget::unlimited(), |m| {
        b.record(m).map_err(|_| Error::BadHint { hint: "io".into() })
    })
    .unwrap();
    (std::mem::take(a.get_mut()), std::mem::take(b.get_mut()))
}

#[test]
fn rule7_invert_and_line_numbers_agree_with_the_reference() {
    let data = b"foo\nbar\n\nfoo bar\r\nbaz";
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v.txt");
    std::fs::write(&p, data).unwrap();
    let recs = records(data, None);
    for invert in [false, true] {
        let c = GrepConfig { invert, line_numbers: true, count: false, ..config("foo") };
        let want: Vec<(u64, u64)> = recs
            .iter()
            .enumerate()
            .filter(|(_, (_, r))| r.windows(3).any(|w| w == b"foo") != invert)
            .map(|(i, (o, _))| (i as u64 + 1, *o))
            .collect();
        let r = run(&p, &c, 4096);
        let got: Vec<(u64, u64)> = r.matches.unwrap().iter().map(|m| (m.line, m.offset)).collect();
        assert_eq!(got, want, "invert {invert}");
        assert_eq!(run(&p, &GrepConfig { count: true, ..c }, 4096).count, want.len() as u64);
    }
}

#[test]
fn rule8_records_from_the_first_block_with_a_nul_are_binary() {
    let mut data: Vec<u8> = (0..2000u32).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
    data[9000] = 0;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("b.bin");
    std::fs::write(&p, &data).unwrap();
    let c = GrepConfig { count: false, ..config("line") };
    let found = run(&p, &c, 4096).matches.unwrap();
    assert!(found.iter().all(|m| m.binary == (m.offset >= 8192)), "block 2 holds byte 9000");
    let c = GrepConfig { text: true, ..c };
    assert!(run(&p, &c, 4096).matches.unwrap().iter().all(|m| !m.binary));
}

#[test]
fn grep_reader_reads_records_longer_than_its_buffer() {
    let mut data = vec![b'x'; 3 << 20];
    data.extend_from_slice(b"y\nshort y\nlast");
    let c = GrepConfig { count: false, ..config("y$") };
    let mut seen = Vec::new();
    let r = grep_reader(&data[..], Path::new("-"), &c, &Budget::unlimited(), |m| {
        seen.push((m.offset, m.record.len()));
        Ok::<(), Error>(())
    })
    .unwrap();
    assert_eq!((r.count, seen), (2, vec![(0, (3 << 20) + 1), ((3 << 20) + 2, 7)]));
    assert_eq!(r.run.bytes_read, data.len() as u64);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Rules 5 and 7: what is listed (selected and context records, lines, spans) and what the
    /// GNU printer makes of it do not depend on the block size or on the path (pipeline or
    /// reader); the selected records are the reference's.
    #[test]
    fn listing_with_context_does_not_depend_on_blocks(
        data in prop::collection::vec(prop::sample::select(b"aab \r\n\n\n".to_vec()), 0..30_000),
        pattern in prop::sample::select(&["a", "ab", "^$", "b\\r", "a+"][..]),
        invert in any::<bool>(),
        before in 0usize..4,
        after in 0usize..4,
        only_matching in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.txt");
        std::fs::write(&p, &data).unwrap();
        let c = GrepConfig {
            count: false, invert, line_numbers: true, only_matching,
            before_context: before, after_context: after, ..config(pattern)
        };
        let small = run(&p, &c, 4096).matches.unwrap();
        let selected: Vec<(u64, Vec<u8>)> =
            small.iter().filter(|m| m.selected).map(|m| (m.offset, m.record.clone())).collect();
        let re = Regex::new(pattern).unwrap();
        let want: Vec<(u64, Vec<u8>)> = records(&data, None).into_iter()
            .filter(|(_, r)| re.is_match(r) != invert).map(|(o, r)| (o, r.to_vec())).collect();
        prop_assert_eq!(selected, want);
        let (a, b) = printed(&p, &c, 4096);
        let (a2, _) = printed(&p, &c, 1 << 16);
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(&a, &a2);
        if before + after == 0 {
            prop_assert_eq!(listed(&small), listed(&run(&p, &c, 1 << 20).matches.unwrap()));
        }
    }
}
