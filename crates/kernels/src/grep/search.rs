//! The grep kernel: compiles the pattern list, finds the matching records of a block with a
//! block-wide search (the parent module's doc says how and why), and selects what a block hands
//! over: the selected records (matching, or not matching with `invert`), the context records
//! around them, and the match spans inside them.

use memchr::memmem;
use regex::bytes::{Regex, RegexBuilder};
use sluice_io::{Block, BlockKernel, Budget, RecordLayout};

use super::{BlockMatches, GrepConfig, MATCH_OVERHEAD_BYTES, RecordMatch};
use crate::Error;

/// A record of a block: `(start, content_end, next_start)`, byte positions in the block.
type Rec = (usize, usize, usize);

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

    /// The non-empty matches in `hay`, leftmost first, as GNU grep's `-o` prints them.
    fn spans(&self, hay: &[u8]) -> Vec<(u32, u32)> {
        let span = |s: usize, e: usize| (s as u32, e as u32);
        match self {
            Matcher::Literal(f) if f.needle().is_empty() => Vec::new(),
            Matcher::Literal(f) => {
                f.find_iter(hay).map(|s| span(s, s + f.needle().len())).collect()
            }
            Matcher::Regex(r) => r
                .find_iter(hay)
                .filter(|m| !m.is_empty())
                .map(|m| span(m.start(), m.end()))
                .collect(),
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

/// The one regex for `config`'s pattern list (rule 4): each pattern escaped with
/// `fixed_strings`, wrapped for `word` / `line_regexp`, all joined as alternatives.
fn regex_source(config: &GrepConfig, lines: bool) -> Result<String, Error> {
    let parts: Vec<&str> =
        if lines { config.pattern.split('\n').collect() } else { vec![config.pattern.as_str()] };
    let mut alternatives = Vec::with_capacity(parts.len());
    for part in parts {
        let p = if config.fixed_strings { regex::escape(part) } else { part.to_string() };
        // Compile each alone first, so an error names the pattern the user wrote.
        if !config.fixed_strings && parts_len(config, lines) > 1 {
            Regex::new(&p)
                .map_err(|e| Error::Pattern { pattern: part.to_string(), reason: one_line(&e) })?;
        }
        // GNU grep -w: the match is preceded and followed by a non-word byte or a line edge
        // (grep(1), "--word-regexp"): the half word boundaries of regex 1.10 say exactly that.
        let p = if config.word { format!(r"\b{{start-half}}(?:{p})\b{{end-half}}") } else { p };
        let p = if config.line_regexp { format!("^(?:{p})$") } else { p };
        alternatives.push(p);
    }
    Ok(if alternatives.len() == 1 {
        alternatives.pop().unwrap_or_default()
    } else {
        alternatives.iter().map(|p| format!("(?:{p})")).collect::<Vec<_>>().join("|")
    })
}

fn parts_len(config: &GrepConfig, lines: bool) -> usize {
    if lines { config.pattern.split('\n').count() } else { 1 }
}

/// The grep kernel: searches blocks of whole records (see the parent module's doc).
#[derive(Debug)]
pub struct GrepKernel {
    matcher: Matcher,
    pub(super) layout: RecordLayout,
    /// Block-wide search is exact for this pattern and layout.
    block_search: bool,
    count_matches: bool,
    list: bool,
    invert: bool,
    before: usize,
    after: usize,
    count_lines: bool,
    spans: bool,
    find_nul: bool,
    budget: Budget,
}

impl GrepKernel {
    /// Compiles `config`'s pattern list. Listed records are reserved from `budget` (rule 6).
    pub fn new(config: &GrepConfig, budget: Budget) -> Result<GrepKernel, Error> {
        let layout = config.layout()?;
        let lines = matches!(layout, RecordLayout::Delimited(_));
        let source = regex_source(config, lines)?;
        let regex = RegexBuilder::new(&source)
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
            .parse(&source)
            .ok();
        let (matcher, block_search) = match hir.as_ref().map(|h| h.kind()) {
            // A pattern that is one literal (`-F foo`, `aaaaa`, `foo\.bar`) is searched with
            // memmem: the regex engine would find the same matches with more overhead per call.
            Some(regex_syntax::hir::HirKind::Literal(lit)) => {
                (Matcher::Literal(Box::new(memmem::Finder::new(&lit.0).into_owned())), true)
            }
            _ => {
                let block_search = match hir.map(|h| h.properties().look_set()) {
                    Some(looks) if lines => !looks.contains_anchor_haystack(),
                    Some(looks) => looks.is_empty(),
                    None => false,
                };
                (Matcher::Regex(regex), block_search)
            }
        };
        let list = !config.count;
        Ok(GrepKernel {
            matcher,
            layout,
            block_search,
            count_matches: config.count_matches,
            list,
            invert: config.invert,
            before: if list { config.before_context } else { 0 },
            after: if list { config.after_context } else { 0 },
            count_lines: list && config.line_numbers,
            spans: list && config.only_matching,
            find_nul: list && !config.text,
            budget,
        })
    }

    /// The record that starts at `s`, or, for `from <= s`, the record holding byte `s` of a block
    /// that starts at a record start and holds whole records, given that `from` is a record start.
    #[inline]
    fn record_at(&self, data: &[u8], from: usize, s: usize) -> Rec {
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

    /// The start of the record that ends just before the record start `b > 0`.
    fn prev_start(&self, data: &[u8], b: usize) -> usize {
        match self.layout {
            RecordLayout::Delimited(d) => {
                let end = if b == data.len() && data[b - 1] != d { b } else { b - 1 };
                memchr::memrchr(d, &data[..end]).map_or(0, |i| i + 1)
            }
            RecordLayout::Fixed(n) => (b - 1) - (b - 1) % n.get(),
        }
    }

    /// The records in `data[from..to]` (`from` and `to` record starts).
    fn count_records(&self, data: &[u8], from: usize, to: usize) -> u64 {
        match self.layout {
            RecordLayout::Delimited(d) => {
                let full = memchr::memchr_iter(d, &data[from..to]).count() as u64;
                full + u64::from(to > from && data[to - 1] != d)
            }
            RecordLayout::Fixed(n) => (to - from).div_ceil(n.get()) as u64,
        }
    }

    /// Calls `hit` with every record of `data` that matches, in order (rule 2).
    fn search(&self, data: &[u8], mut hit: impl FnMut(Rec)) {
        let mut pos = 0;
        if !self.block_search {
            while pos < data.len() {
                let r = self.record_at(data, pos, pos);
                if self.matcher.is_match(&data[r.0..r.1]) {
                    hit(r);
                }
                pos = r.2;
            }
            return;
        }
        while pos < data.len() {
            let r = match &self.matcher {
                Matcher::Literal(_) => {
                    let Some((s, e)) = self.matcher.find_at(data, pos) else { break };
                    if s >= data.len() {
                        break;
                    }
                    let r = self.record_at(data, pos, s);
                    // A match inside the record is a match of the record alone (module doc);
                    // one that runs past it is decided below (rule 2).
                    if e <= r.1 {
                        hit(r);
                        pos = r.2;
                        continue;
                    }
                    r
                }
                Matcher::Regex(re) => {
                    // 1. Some match end `e`, found by a search that stops as soon as a match is
                    //    complete (`shortest_match_at`; for the lazy DFA the earliest end), so a
                    //    greedy tail like `a.*` does not run on to the block's end.
                    let Some(e) = re.shortest_match_at(data, pos) else { break };
                    let at = if e > pos { e - 1 } else { pos };
                    if at >= data.len() {
                        break;
                    }
                    // 2. The leftmost match start in the whole records up to the one holding
                    //    byte e - 1: the first record with a match of its own starts at or after
                    //    it, and the truncated haystack bounds the greedy search.
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
            if self.matcher.is_match(&data[r.0..r.1]) {
                hit(r);
            }
            pos = r.2;
        }
    }

    /// The selected records of `data`: the matching ones, or with `invert` the others.
    fn select(&self, data: &[u8]) -> Vec<Rec> {
        let mut hits = Vec::new();
        self.search(data, |r| hits.push(r));
        if !self.invert {
            return hits;
        }
        let mut out = Vec::new();
        let mut pos = 0;
        for h in hits.into_iter().chain([(data.len(), data.len(), data.len())]) {
            while pos < h.0 {
                let r = self.record_at(data, pos, pos);
                out.push(r);
                pos = r.2;
            }
            pos = h.2;
        }
        out
    }

    /// `selected` with the context records around each (`(record, is_selected)`, in order): up
    /// to `before` records before and `after` records after every selected record, plus the
    /// block's first `after` and last `before` records, which a neighbour block's selected
    /// records may need (the fold decides, contract rule 7).
    fn with_context(&self, data: &[u8], selected: &[Rec]) -> Vec<(Rec, bool)> {
        let mut out = Vec::with_capacity(selected.len());
        let mut done = 0;
        let mut after_left = self.after;
        let flush_after = |out: &mut Vec<(Rec, bool)>, done: &mut usize, left, until| {
            for _ in 0..left {
                if *done >= until {
                    break;
                }
                let r = self.record_at(data, *done, *done);
                out.push((r, false));
                *done = r.2;
            }
        };
        for &r in selected {
            flush_after(&mut out, &mut done, after_left, r.0);
            let mut b = r.0;
            for _ in 0..self.before {
                if b <= done {
                    break;
                }
                b = self.prev_start(data, b);
            }
            flush_after(&mut out, &mut b, usize::MAX, r.0);
            out.push((r, true));
            done = r.2;
            after_left = self.after;
        }
        flush_after(&mut out, &mut done, after_left, data.len());
        let mut b = data.len();
        for _ in 0..self.before {
            if b <= done {
                break;
            }
            b = self.prev_start(data, b);
        }
        flush_after(&mut out, &mut b, usize::MAX, data.len());
        out
    }

    /// The selected records of a block as `(start, content end, next)` ranges, the records
    /// selected and the matches counted (with `count_matches`), for a caller that keeps the
    /// bytes itself (distributed grep: no context, line numbers or `-o`).
    pub(crate) fn select_ranges(&self, data: &[u8]) -> (Vec<Rec>, u64) {
        let plain = !self.invert && self.before == 0 && self.after == 0 && !self.count_lines;
        let selected = if plain {
            let mut out = Vec::new();
            self.search(data, |r| out.push(r));
            out
        } else {
            self.select(data)
        };
        let matches = if self.count_matches {
            selected.iter().map(|r| self.matcher.count(&data[r.0..r.1])).sum()
        } else {
            0
        };
        (selected, matches)
    }

    /// Searches one block of whole records starting at stream offset `base`.
    pub(super) fn search_block(&self, data: &[u8], base: u64) -> BlockMatches {
        let mut out = BlockMatches::default();
        let plain = !self.invert && self.before == 0 && self.after == 0 && !self.count_lines;
        if plain && !self.spans {
            self.search(data, |(start, end, next)| {
                out.records += 1;
                if self.count_matches {
                    out.matches += self.matcher.count(&data[start..end]);
                }
                if self.list {
                    out.found.push(RecordMatch::new(base, data, (start, end, next), true));
                }
            });
        } else {
            let selected = self.select(data);
            out.records = selected.len() as u64;
            if self.count_matches {
                out.matches = selected.iter().map(|r| self.matcher.count(&data[r.0..r.1])).sum();
            }
            if self.list {
                let listed = if self.before + self.after > 0 {
                    self.with_context(data, &selected)
                } else {
                    selected.iter().map(|&r| (r, true)).collect()
                };
                let (mut line, mut at) = (0u64, 0usize);
                for (r, is_selected) in listed {
                    let mut m = RecordMatch::new(base, data, r, is_selected);
                    if self.count_lines {
                        line += self.count_records(data, at, r.0) + 1;
                        at = r.2;
                        m.line = line;
                    }
                    // The records that match: selected ones, or with `invert` the context.
                    if self.spans && is_selected != self.invert {
                        m.spans = self.matcher.spans(&m.record);
                    }
                    out.found.push(m);
                }
            }
        }
        if self.count_lines {
            out.lines = self.count_records(data, 0, data.len());
        }
        out.nul = self.find_nul && memchr::memchr(0, data).is_some();
        out
    }
}

impl BlockKernel for GrepKernel {
    type Partial = Result<BlockMatches, Error>;

    fn process(&self, block: &Block<'_>) -> Self::Partial {
        let mut out = self.search_block(block.data, block.stream_offset);
        if !out.found.is_empty() {
            let bytes: u64 =
                out.found.iter().map(|m| m.record.len() as u64 + MATCH_OVERHEAD_BYTES).sum();
            out.held = Some(self.budget.reserve("the matching records", bytes)?);
        }
        Ok(out)
    }
}
