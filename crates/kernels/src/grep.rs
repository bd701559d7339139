//! Grep over lines or fixed-size records in one streaming pass: count the records that match,
//! count every match, or list the matching records with their byte offsets.
//!
//! # Contract
//! 1. Records are lines ending at `\n` (a last line without `\n` is a record; `\r` is an ordinary
//!    byte; an empty file has no records), or, with `record_size = n`, the file cut every `n`
//!    bytes (a short last record is a record). `record_size = 0` is an error.
//! 2. A match never crosses a record boundary: a record matches if and only if the pattern
//!    matches the record's bytes alone (a line without its `\n`). `^` and `$` match at the
//!    record's start and end.
//! 3. `count` mode gives the number of records with at least one match (`grep -c`);
//!    `count_matches` gives the number of non-overlapping matches, counted record by record
//!    (`rg --count-matches`). Listing gives every matching record in file order with the byte
//!    offset of its first byte (`grep -b`).
//! 4. Patterns are regexes of the `regex` crate (bytes API; Unicode on, invalid UTF-8 in the data
//!    allowed); `fixed_strings` makes the pattern a literal.
//! 5. Results do not depend on the block size or the engine: blocks hold whole records, and
//!    partials are folded in stream order.
//! 6. Listed records are held in memory until the pass ends; their bytes are reserved from the
//!    memory budget block by block, and a pass whose matches would not fit is an
//!    [`Error`] (`OverBudget`) naming the budget, not an OOM kill.
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
//! record, so each byte is scanned O(1) times.
//!
//! This is exact when a match of a record alone is also a match in the block, at the same
//! place: true for lines (`^`, `$` in multi-line mode and word boundaries all treat `\n` like the
//! edge of the haystack), and for fixed records only if the pattern has no assertions at all.
//! Patterns with `\A`/`\z`, and fixed-record patterns with any assertion, are searched record by
//! record.

use std::num::NonZeroUsize;
use std::path::Path;

use memchr::memmem;
use regex::bytes::{Regex, RegexBuilder};
use serde::{Serialize, Serializer};
use sluice_io::{Block, BlockKernel, Budget, Pipeline, Plan, RecordLayout, Reservation, RunStats};

use crate::Error;
use crate::hints::{self, Hinted};

/// Bytes reserved per compute thread for the regex engine's caches (the lazy DFA's default
/// cache capacity is 2 MiB).
pub const MATCHER_CACHE_BYTES: u64 = 2 << 20;

/// Bytes charged to the budget per listed match beyond its record bytes (offset, vector header).
const MATCH_OVERHEAD_BYTES: u64 = 32;

/// Parameters of a grep pass. Every field can also be set by a hint of the same name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrepConfig {
    /// The pattern (a regex, or a literal with `fixed_strings`).
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
}

impl Hinted for GrepConfig {
    const KEYS: &'static str =
        "pattern, fixed_strings, ignore_case, record_size, count_matches, count";

    fn apply_hint(&mut self, key: &str, value: &str) -> Result<(), Error> {
        match key {
            "pattern" => self.pattern = value.to_string(),
            "fixed_strings" => self.fixed_strings = hints::parse_bool(key, value)?,
            "ignore_case" => self.ignore_case = hints::parse_bool(key, value)?,
            "record_size" => self.record_size = Some(hints::parse_usize(key, value)?),
            "count_matches" => self.count_matches = hints::parse_bool(key, value)?,
            "count" => self.count = hints::parse_bool(key, value)?,
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

/// The regex crate's error on one line: its syntax errors span several lines (the pattern, a
/// caret, then `error: what`); keep `what` and the caret's byte offset.
fn one_line(e: &regex::Error) -> String {
    let text = e.to_string();
    let lines: Vec<&str> = text.lines().collect();
    let reason = lines.iter().rev().find_map(|l| l.strip_prefix("error: "));
    let caret = lines.iter().find_map(|l| l.trim_end().ends_with('^').then(|| l.find('^')));
    match (reason, caret.flatten()) {
        // The syntax error's first lines are "regex parse error:", "    PATTERN".
        (Some(r), Some(col)) => format!("{r} at byte {}", col.saturating_sub(4)),
        (Some(r), None) => r.to_string(),
        _ => lines.join(" "),
    }
}

/// One matching record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordMatch {
    /// Byte offset of the record's first byte in the file.
    pub offset: u64,
    /// The record's bytes (a line without its `\n`).
    pub record: Vec<u8>,
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
    /// Records with at least one match.
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
    pub(crate) records: u64,
    pub(crate) matches: u64,
    pub(crate) found: Vec<RecordMatch>,
    held: Option<Reservation>,
}

#[derive(Debug)]
enum Matcher {
    // Boxed: a Finder is ~300 bytes, a Regex a few pointers.
    Literal(Box<memmem::Finder<'static>>),
    Regex(Regex),
}

impl Matcher {
    #[inline]
    fn find_at(&self, hay: &[u8], at: usize) -> Option<(usize, usize)> {
        match self {
            Matcher::Literal(f) => f.find(&hay[at..]).map(|s| (at + s, at + s + f.needle().len())),
            Matcher::Regex(r) => r.find_at(hay, at).map(|m| (m.start(), m.end())),
        }
    }

    fn is_match(&self, hay: &[u8]) -> bool {
        match self {
            Matcher::Literal(f) => f.find(hay).is_some(),
            Matcher::Regex(r) => r.is_match(hay),
        }
    }

    fn count(&self, hay: &[u8]) -> u64 {
        match self {
            Matcher::Literal(f) if f.needle().is_empty() => hay.len() as u64 + 1,
            Matcher::Literal(f) => f.find_iter(hay).count() as u64,
            Matcher::Regex(r) => r.find_iter(hay).count() as u64,
        }
    }
}

/// The grep kernel: searches blocks of whole records (see the module doc).
#[derive(Debug)]
pub struct GrepKernel {
    matcher: Matcher,
    layout: RecordLayout,
    /// Block-wide search is exact for this pattern and layout.
    block_search: bool,
    count_matches: bool,
    list: bool,
    budget: Budget,
}

impl GrepKernel {
    /// Compiles `config`'s pattern. Listed matches are reserved from `budget` (rule 6).
    pub fn new(config: &GrepConfig, budget: Budget) -> Result<GrepKernel, Error> {
        let layout = config.layout()?;
        let lines = matches!(layout, RecordLayout::Delimited(_));
        let (matcher, block_search) = if config.fixed_strings && !config.ignore_case {
            let finder = memmem::Finder::new(config.pattern.as_bytes()).into_owned();
            (Matcher::Literal(Box::new(finder)), true)
        } else {
            let pattern = if config.fixed_strings {
                regex::escape(&config.pattern)
            } else {
                config.pattern.clone()
            };
            let regex = RegexBuilder::new(&pattern)
                .multi_line(lines)
                .case_insensitive(config.ignore_case)
                .build()
                .map_err(|e| Error::Pattern {
                    pattern: config.pattern.clone(),
                    reason: one_line(&e),
                })?;
            let hir = regex_syntax::ParserBuilder::new()
                .utf8(false)
                .multi_line(lines)
                .case_insensitive(config.ignore_case)
                .build()
                .parse(&pattern)
                .ok();
            // A regex that is one literal (`aaaaa`, `foo\.bar`) is searched with memmem, as -F
            // is: the regex engine would find the same matches with more overhead per call.
            if let Some(regex_syntax::hir::HirKind::Literal(lit)) = hir.as_ref().map(|h| h.kind()) {
                return Ok(GrepKernel {
                    matcher: Matcher::Literal(Box::new(memmem::Finder::new(&lit.0).into_owned())),
                    layout,
                    block_search: true,
                    count_matches: config.count_matches,
                    list: !config.count,
                    budget,
                });
            }
            let block_search = match hir.map(|h| h.properties().look_set()) {
                Some(looks) if lines => !looks.contains_anchor_haystack(),
                Some(looks) => looks.is_empty(),
                None => false,
            };
            (Matcher::Regex(regex), block_search)
        };
        Ok(GrepKernel {
            matcher,
            layout,
            block_search,
            count_matches: config.count_matches,
            list: !config.count,
            budget,
        })
    }

    /// The record holding byte `s` of a block that starts at a record start and holds whole
    /// records, given that `from <= s` is a record start: `(start, content_end, next_start)`.
    #[inline]
    fn record_at(&self, data: &[u8], from: usize, s: usize) -> (usize, usize, usize) {
        match self.layout {
            RecordLayout::Delimited(d) => {
                let start = memchr::memrchr(d, &data[from..s]).map_or(from, |i| from + i + 1);
                match memchr::memchr(d, &data[s..]) {
                    Some(i) => (start, s + i, s + i + 1),
                    None => (start, data.len(), data.len()),
                }
            }
            RecordLayout::Fixed(n) => {
                let start = s - s % n.get();
                let end = (start + n.get()).min(data.len());
                (start, end, end)
            }
        }
    }

    fn hit(&self, out: &mut BlockMatches, data: &[u8], start: usize, end: usize, base: u64) {
        let record = &data[start..end];
        out.records += 1;
        if self.count_matches {
            out.matches += self.matcher.count(record);
        }
        if self.list {
            out.found.push(RecordMatch { offset: base + start as u64, record: record.to_vec() });
        }
    }

    fn search(&self, data: &[u8], base: u64) -> BlockMatches {
        let mut out = BlockMatches::default();
        let mut pos = 0;
        if self.block_search {
            while pos < data.len() {
                let (start, end, next) = match &self.matcher {
                    Matcher::Literal(_) => {
                        let Some((s, e)) = self.matcher.find_at(data, pos) else { break };
                        if s >= data.len() {
                            break;
                        }
                        let (start, end, next) = self.record_at(data, pos, s);
                        // A match inside the record is a match of the record alone (module
                        // doc); one that runs past it is decided below (rule 2).
                        if e <= end {
                            self.hit(&mut out, data, start, end, base);
                            pos = next;
                            continue;
                        }
                        (start, end, next)
                    }
                    Matcher::Regex(re) => {
                        // 1. Some match end `e`, found by a search that stops as soon as a match
                        //    is complete (`shortest_match_at`; for the lazy DFA the earliest end),
                        //    so a greedy tail like `a.*` does not run on to the block's end.
                        let Some(e) = re.shortest_match_at(data, pos) else { break };
                        let at = if e > pos { e - 1 } else { pos };
                        if at >= data.len() {
                            break;
                        }
                        // 2. The leftmost match start in the whole records up to the one holding
                        //    byte e - 1: the first record with a match of its own starts at or
                        //    after it, and the truncated haystack bounds the greedy search.
                        let (_, _, limit) = self.record_at(data, pos, at);
                        match re.find_at(&data[..limit], pos) {
                            Some(m) if m.start() < limit => self.record_at(data, pos, m.start()),
                            _ => {
                                pos = limit;
                                continue;
                            }
                        }
                    }
                };
                if self.matcher.is_match(&data[start..end]) {
                    self.hit(&mut out, data, start, end, base);
                }
                pos = next;
            }
        } else {
            while pos < data.len() {
                let (start, end, next) = self.record_at(data, pos, pos);
                if self.matcher.is_match(&data[start..end]) {
                    self.hit(&mut out, data, start, end, base);
                }
                pos = next;
            }
        }
        out
    }
}

impl BlockKernel for GrepKernel {
    type Partial = Result<BlockMatches, Error>;

    fn process(&self, block: &Block<'_>) -> Self::Partial {
        let mut out = self.search(block.data, block.stream_offset);
        if !out.found.is_empty() {
            let bytes: u64 =
                out.found.iter().map(|m| m.record.len() as u64 + MATCH_OVERHEAD_BYTES).sum();
            out.held = Some(self.budget.reserve("the matching records", bytes)?);
        }
        Ok(out)
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
    let (mut records, mut matches) = (0u64, 0u64);
    let mut failed: Option<E> = None;
    let run = pipeline.run_ordered(&plan, &kernel, |partial| {
        if failed.is_some() {
            return;
        }
        match partial {
            Ok(block) => {
                records += block.records;
                matches += block.matches;
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
    Ok(GrepReport {
        count: if config.count_matches { matches } else { records },
        counting: if config.count_matches { "matches" } else { "records" },
        records_matched: records,
        matches_total: config.count_matches.then_some(matches),
        matches: None,
        run,
        held: Vec::new(),
    })
}

#[cfg(test)]
mod tests;
