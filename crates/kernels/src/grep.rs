//! Grep over lines or fixed-size records in one streaming pass, as people use grep: count the
//! records that match, count every match, or list the selected records (with line numbers,
//! context and match spans on request) for a printer such as [`gnu::GnuPrinter`].
//!
//! # Contract
//! 1. Records are lines ending at `\n` (a last line without `\n` is a record; `\r` is an ordinary
//!    byte; an empty file has no records), or, with `record_size = n`, the file cut every `n`
//!    bytes (a short last record is a record). `record_size = 0` is an error.
//! 2. A match never crosses a record boundary: a record matches if and only if the pattern
//!    matches the record's bytes alone (a line without its `\n`). `^` and `$` match at the
//!    record's start and end.
//! 3. `count` mode gives the number of selected records (`grep -c`); `count_matches` gives the
//!    number of non-overlapping matches, counted record by record (`rg --count-matches`).
//!    Listing gives every selected record in file order with the byte offset of its first byte
//!    (`grep -b`), its line number when `line_numbers` is set (`grep -n`), and its non-empty
//!    match spans when `only_matching` is set (`grep -o`, and `--color`): those of the selected
//!    records, or with `invert` those of the context records (the ones that match).
//! 4. Patterns are regexes of the `regex` crate (bytes API; Unicode on, invalid UTF-8 in the data
//!    allowed); `fixed_strings` makes each pattern a literal. Over lines, `pattern` is a list
//!    separated by `\n` (as GNU grep reads `-e p1 -e p2`): a line matches if any pattern does.
//!    `word` keeps only matches with a non-word byte or the line's edge on both sides (`grep
//!    -w`), `line_regexp` only matches of the whole record (`grep -x`).
//! 5. Results do not depend on the block size or the engine: blocks hold whole records, and
//!    partials are folded in stream order.
//! 6. Listed records are held in memory until the pass ends; their bytes are reserved from the
//!    memory budget block by block, and a pass whose matches would not fit is an
//!    [`Error`] (`OverBudget`) naming the budget, not an OOM kill. [`grep_with`] hands them
//!    over as each block is folded instead.
//! 7. A record is *selected* if it matches, or with `invert` if it does not (`grep -v`). With
//!    `before_context`/`after_context` = B/A, listing also hands over (as context, not selected)
//!    every record within B records before or A records after a selected one, and possibly
//!    some more near block edges: the printer keeps only those within reach (contiguity is
//!    known from `offset`/`end`).
//! 8. Unless `text`, listed records carry `binary = true` from the first block that holds a NUL
//!    byte on (GNU grep's test for binary data, at block granularity): a printer stops there.
//!
//! # How a block is searched (and why it is fast)
//! As ripgrep does, the whole block is searched for a candidate, not each record: for a rare
//! pattern that is one `memmem`-speed scan per block. A literal (`fixed_strings`, or a regex that
//! is one literal) is found with `memmem`; the record holding the match start is found (`memrchr`
//! back to the previous `\n`, or arithmetic for fixed records), and if the match ends inside the
//! record it counts as is. A regex is first searched for a match *end* with `shortest_match_at`,
//! which stops as soon as a match is complete, and then for the leftmost match start in the
//! block cut after the record holding that end, so greedy tails like `a.*` never run on to the
//! end of the block (which would make a block with many matches quadratic); the record holding
//! the start is searched alone to decide (rule 2). Either way the search resumes at the next
//! record, so each byte is scanned O(1) times. Inverting, context and line numbers walk the
//! gaps between matching records with `memchr` afterwards, only when asked for.
//!
//! This is exact when a match of a record alone is also a match in the block, at the same
//! place: true for lines (`^`, `$` in multi-line mode and word boundaries all treat `\n` like the
//! edge of the haystack), and for fixed records only if the pattern has no assertions at all.
//! Patterns with `\A`/`\z`, and fixed-record patterns with any assertion, are searched record by
//! record.
//!
//! Standard input and other streams that cannot be planned are read by [`grep_reader`] through
//! the same kernel, one buffer at a time on the calling thread.

use std::io::Read;
use std::num::NonZeroUsize;
use std::path::Path;

use serde::{Serialize, Serializer};
use sluice_io::{Budget, Pipeline, Plan, RecordLayout, Reservation, RunStats};

use crate::Error;
use crate::hints::{self, Hinted};

pub mod gnu;
mod search;

pub use search::GrepKernel;

/// Bytes reserved per compute thread for the regex engine's caches (the lazy DFA's default
/// cache capacity is 2 MiB).
pub const MATCHER_CACHE_BYTES: u64 = 2 << 20;

/// Bytes charged to the budget per listed match beyond its record bytes (offset, vector header).
const MATCH_OVERHEAD_BYTES: u64 = 32;

/// Bytes [`grep_reader`] reads at a time (its buffer grows for a longer record).
const READER_CHUNK_BYTES: usize = 1 << 20;

/// Parameters of a grep pass. Every field can also be set by a hint of the same name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrepConfig {
    /// The pattern (a regex, or a literal with `fixed_strings`); over lines, a `\n`-separated
    /// list of patterns (rule 4).
    pub pattern: String,
    /// Treat the pattern as a literal string.
    pub fixed_strings: bool,
    /// Case-insensitive matching.
    pub ignore_case: bool,
    /// Cut fixed records of this many bytes instead of lines.
    pub record_size: Option<usize>,
    /// Count every match, not matching records.
    pub count_matches: bool,
    /// Count only; do not list the matching records.
    pub count: bool,
    /// Select the records that do not match (rule 7).
    pub invert: bool,
    /// Match whole words only (rule 4).
    pub word: bool,
    /// Match whole records only (rule 4).
    pub line_regexp: bool,
    /// Number the listed records (rule 3).
    pub line_numbers: bool,
    /// List the match spans of each selected record (rule 3).
    pub only_matching: bool,
    /// Context records before each selected one (rule 7).
    pub before_context: usize,
    /// Context records after each selected one (rule 7).
    pub after_context: usize,
    /// Treat NUL bytes as text: do not mark records as binary (rule 8).
    pub text: bool,
}

impl Hinted for GrepConfig {
    const KEYS: &'static str = "pattern, fixed_strings, ignore_case, record_size, count_matches, \
count, invert, word, line_regexp, line_numbers, only_matching, before_context, after_context, text";

    fn apply_hint(&mut self, key: &str, value: &str) -> Result<(), Error> {
        let flag = |v: &str| hints::parse_bool(key, v);
        match key {
            "pattern" => self.pattern = value.to_string(),
            "fixed_strings" => self.fixed_strings = flag(value)?,
            "ignore_case" => self.ignore_case = flag(value)?,
            "record_size" => self.record_size = Some(hints::parse_usize(key, value)?),
            "count_matches" => self.count_matches = flag(value)?,
            "count" => self.count = flag(value)?,
            "invert" => self.invert = flag(value)?,
            "word" => self.word = flag(value)?,
            "line_regexp" => self.line_regexp = flag(value)?,
            "line_numbers" => self.line_numbers = flag(value)?,
            "only_matching" => self.only_matching = flag(value)?,
            "before_context" => self.before_context = hints::parse_usize(key, value)?,
            "after_context" => self.after_context = hints::parse_usize(key, value)?,
            "text" => self.text = flag(value)?,
            _ => return Err(hints::unknown(key, Self::KEYS)),
        }
        Ok(())
    }
}

impl GrepConfig {
    /// Counting records that match the regex `pattern`, over lines.
    pub fn new(pattern: impl Into<String>) -> GrepConfig {
        GrepConfig { pattern: pattern.into(), count: true, ..GrepConfig::default() }
    }

    /// The record layout (rule 1).
    pub fn layout(&self) -> Result<RecordLayout, Error> {
        match self.record_size {
            None => Ok(RecordLayout::Delimited(b'\n')),
            Some(n) => NonZeroUsize::new(n).map(RecordLayout::Fixed).ok_or(Error::TooSmall {
                key: "record_size",
                value: n,
                min: 1,
            }),
        }
    }
}

/// One listed record: a selected one, or a context record (rule 7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordMatch {
    /// Byte offset of the record's first byte in the file.
    pub offset: u64,
    /// The record's bytes (a line without its `\n`).
    pub record: Vec<u8>,
    /// Byte offset of the next record (after the `\n`): a record is contiguous with this one if
    /// and only if its `offset` is this `end`.
    pub end: u64,
    /// Whether the record is selected (rule 7); false for a context record.
    pub selected: bool,
    /// Its 1-based line (record) number with `line_numbers`, else 0.
    pub line: u64,
    /// At or after the first block holding a NUL byte (rule 8).
    pub binary: bool,
    /// With `only_matching`: the non-empty matches, as byte ranges of `record`.
    pub spans: Vec<(u32, u32)>,
}

impl RecordMatch {
    /// The record `r = (start, content_end, next)` of a block at stream offset `base`.
    fn new(base: u64, data: &[u8], r: (usize, usize, usize), selected: bool) -> RecordMatch {
        RecordMatch {
            offset: base + r.0 as u64,
            record: data[r.0..r.1].to_vec(),
            end: base + r.2 as u64,
            selected,
            line: 0,
            binary: false,
            spans: Vec::new(),
        }
    }
}

impl Serialize for RecordMatch {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("RecordMatch", 2)?;
        st.serialize_field("offset", &self.offset)?;
        st.serialize_field("record", &escape_bytes(&self.record))?;
        st.end()
    }
}

/// The bytes as text, each byte of invalid UTF-8 written `\xNN` (lowercase hex), as Python's
/// `bytes.decode("utf-8", "backslashreplace")` does.
pub fn escape_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// What a grep pass found.
#[derive(Debug, Serialize)]
pub struct GrepReport {
    /// The figure asked for: matching records, or matches with `count_matches` (rule 3).
    pub count: u64,
    /// `records` or `matches`: what `count` counts.
    pub counting: &'static str,
    /// Selected records: with at least one match, or with `invert` without one.
    pub records_matched: u64,
    /// Every match (only counted with `count_matches`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matches_total: Option<u64>,
    /// The matching records in file order (unless `count`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matches: Option<Vec<RecordMatch>>,
    /// Statistics of the pass.
    pub run: RunStats,
    /// Budget held for `matches` (rule 6), released with the report.
    #[serde(skip)]
    #[allow(dead_code)]
    held: Vec<Reservation>,
}

/// What one block found (the partial of [`GrepKernel`]).
#[derive(Debug, Default)]
pub struct BlockMatches {
    /// Selected records.
    pub(crate) records: u64,
    pub(crate) matches: u64,
    /// Records in the block (counted only with `line_numbers`).
    lines: u64,
    /// The block holds a NUL byte (looked for only when listing without `text`).
    nul: bool,
    pub(crate) found: Vec<RecordMatch>,
    held: Option<Reservation>,
}

/// Folds block results in stream order: numbers lines from the file's start and marks records
/// binary from the first block with a NUL (rules 3, 8).
#[derive(Debug, Default)]
struct Fold {
    records: u64,
    matches: u64,
    lines: u64,
    binary: bool,
}

impl Fold {
    fn block(&mut self, block: &mut BlockMatches) {
        self.records += block.records;
        self.matches += block.matches;
        self.binary |= block.nul;
        for m in &mut block.found {
            if m.line > 0 {
                m.line += self.lines;
            }
            m.binary = self.binary;
        }
        self.lines += block.lines;
    }

    fn report(&self, config: &GrepConfig, run: RunStats) -> GrepReport {
        GrepReport {
            count: if config.count_matches { self.matches } else { self.records },
            counting: if config.count_matches { "matches" } else { "records" },
            records_matched: self.records,
            matches_total: config.count_matches.then_some(self.matches),
            matches: None,
            run,
            held: Vec::new(),
        }
    }
}

/// Searches the file at `path` in one pass of `pipeline` (rules 1–6), collecting the matching
/// records (unless `config.count`) into the report; their bytes stay reserved from `budget` until
/// the report is dropped (rule 6).
pub fn grep(
    path: &Path,
    config: &GrepConfig,
    pipeline: &Pipeline,
    budget: &Budget,
) -> Result<GrepReport, Error> {
    let mut found = Vec::new();
    let mut held = Vec::new();
    let mut report = search_file(path, config, pipeline, budget, |mut block: BlockMatches| {
        found.append(&mut block.found);
        held.extend(block.held);
        Ok::<(), Error>(())
    })?;
    report.matches = (!config.count).then_some(found);
    report.held = held;
    Ok(report)
}

/// Searches the file at `path` in one pass of `pipeline` (rules 1–6), handing every matching
/// record to `on_match` in file order as soon as its block is folded, instead of collecting them:
/// memory stays bounded by the blocks in flight. The first error `on_match` returns ends the
/// hand-over and is returned after the pass.
pub fn grep_with<E, F>(
    path: &Path,
    config: &GrepConfig,
    pipeline: &Pipeline,
    budget: &Budget,
    mut on_match: F,
) -> Result<GrepReport, E>
where
    E: From<Error>,
    F: FnMut(&RecordMatch) -> Result<(), E>,
{
    search_file(path, config, pipeline, budget, |block: BlockMatches| {
        block.found.iter().try_for_each(&mut on_match)
    })
}

/// The pass behind [`grep`] and [`grep_with`]: `sink` gets every block's results in stream
/// order; the counts are folded here.
fn search_file<E, F>(
    path: &Path,
    config: &GrepConfig,
    pipeline: &Pipeline,
    budget: &Budget,
    mut sink: F,
) -> Result<GrepReport, E>
where
    E: From<Error>,
    F: FnMut(BlockMatches) -> Result<(), E>,
{
    let kernel = GrepKernel::new(config, budget.clone())?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let _caches =
        budget.reserve("the regex caches", threads * MATCHER_CACHE_BYTES).map_err(Error::from)?;
    let plan = Plan::file(path, kernel.layout).map_err(Error::from)?;
    let mut fold = Fold::default();
    let mut failed: Option<E> = None;
    let run = pipeline.run_ordered(&plan, &kernel, |partial| {
        if failed.is_some() {
            return;
        }
        match partial {
            Ok(mut block) => {
                fold.block(&mut block);
                if let Err(e) = sink(block) {
                    failed = Some(e);
                }
            }
            Err(e) => {
                failed =
                    Some(Error::Listing { path: path.to_path_buf(), source: Box::new(e) }.into());
            }
        }
    });
    let run = run.map_err(Error::from)?;
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(fold.report(config, run))
}

/// Searches everything `reader` yields (standard input, a pipe, a device) as [`grep_with`]
/// searches a file, on the calling thread: reads of about 1 MiB, cut after the last whole
/// record, each searched as one block. The buffer (grown for a longer record) is reserved from
/// `budget`. `name` names the stream in errors.
pub fn grep_reader<E, F>(
    mut reader: impl Read,
    name: &Path,
    config: &GrepConfig,
    budget: &Budget,
    mut on_match: F,
) -> Result<GrepReport, E>
where
    E: From<Error>,
    F: FnMut(&RecordMatch) -> Result<(), E>,
{
    let kernel = GrepKernel::new(config, budget.clone())?;
    let mut held =
        vec![budget.reserve("the input buffer", READER_CHUNK_BYTES as u64).map_err(Error::from)?];
    let mut buf = vec![0u8; READER_CHUNK_BYTES];
    let (mut len, mut base, mut eof) = (0usize, 0u64, false);
    let mut fold = Fold::default();
    let started = std::time::Instant::now();
    while !eof || len > 0 {
        if !eof && len == buf.len() {
            held.push(budget.reserve("the input buffer", buf.len() as u64).map_err(Error::from)?);
            buf.resize(buf.len() * 2, 0);
        }
        let n = if eof { 0 } else { read_some(&mut reader, &mut buf[len..], name)? };
        eof |= n == 0;
        len += n;
        // Whole records only (rule 5), unless the stream has ended.
        let cut = match kernel.layout {
            _ if eof => len,
            RecordLayout::Delimited(d) => memchr::memrchr(d, &buf[..len]).map_or(0, |i| i + 1),
            RecordLayout::Fixed(k) => len - len % k.get(),
        };
        if cut == 0 {
            continue;
        }
        let mut block = kernel.search_block(&buf[..cut], base);
        fold.block(&mut block);
        block.found.iter().try_for_each(&mut on_match)?;
        buf.copy_within(cut..len, 0);
        (len, base) = (len - cut, base + cut as u64);
    }
    drop(held);
    let seconds = started.elapsed().as_secs_f64();
    let run = RunStats {
        engine: "reader".to_string(),
        backend: "read".to_string(),
        bytes_read: base,
        seconds,
        bandwidth_bytes_per_s: if seconds > 0.0 { base as f64 / seconds } else { 0.0 },
        block_size: READER_CHUNK_BYTES,
        ..RunStats::default()
    };
    Ok(fold.report(config, run))
}

/// One `read` into `buf`, retried on `Interrupted`; an error names the stream and offset.
fn read_some(reader: &mut impl Read, buf: &mut [u8], name: &Path) -> Result<usize, Error> {
    loop {
        match reader.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => return Err(Error::Open { path: name.to_path_buf(), source }),
        }
    }
}

#[cfg(test)]
mod tests;
