//! GNU grep's output format for the records a pass lists (checked byte for byte against GNU grep
//! 3.8 by `tests/python/test_grep_gnu.py`).
//!
//! # Contract
//! 1. A selected line prints as `[NAME:][LINE:][OFFSET:]BYTES\n`, a context line with `-` in
//!    place of each `:` (grep(1), "Output Line Prefix Fields"); the name only when the printer
//!    was given one, the line number with `line_numbers`, the byte offset with `byte_offset`.
//! 2. With context (`-A`, `-B` or `-C`, 0 included), a line `--` separates two groups of printed lines that are not contiguous,
//!    within a file and across files; a group holds each selected line with up to `before`
//!    lines before it and `after` after it (those the pass listed and that are contiguous).
//! 3. With `only_matching`, a selected line prints each non-empty match on its own line, the
//!    byte offset being the match's; context lines are not printed, but they still join groups.
//! 4. Unless `text`, the first selected record marked binary ends the file's output:
//!    [`GnuPrinter::finish_file`] then returns true, and the caller says that the binary file
//!    matches, as GNU grep does on standard error.
//! 5. With `color`, GNU grep's default SGR sequences (`GREP_COLORS` unset: `ms=01;31:mc=01;31:
//!    sl=:cx=:fn=35:ln=32:bn=32:se=36`), each field as `ESC[<sgr>m ESC[K … ESC[m ESC[K`: the file
//!    name magenta, line numbers and byte offsets green, the separators (`:`, `-`, `--`) cyan,
//!    and the record's spans (the caller lists matches in selected records, or with `-v` in
//!    context records) bold red; the rest of a line is plain. `GREP_COLORS` is not read.
//!    [`GnuPrinter::name_line`] and [`GnuPrinter::count_line`] print `-l`/`-L` and `-c` lines.

use std::collections::VecDeque;
use std::io::{self, Write};

use super::RecordMatch;

/// What a [`GnuPrinter`] prints besides the lines (GNU grep's flags of the same meaning).
#[derive(Debug, Clone, Copy, Default)]
pub struct GnuOptions {
    /// `-n`: prefix the line number.
    pub line_numbers: bool,
    /// `-b`: prefix the byte offset.
    pub byte_offset: bool,
    /// `-o`: print only the matches.
    pub only_matching: bool,
    /// `-B`: context lines before a selected line.
    pub before: usize,
    /// `-A`: context lines after a selected line.
    pub after: usize,
    /// `-a`: print records marked binary too.
    pub text: bool,
    /// `--color=always`: GNU grep's default colours (rule 5).
    pub color: bool,
    /// `-A`, `-B` or `-C` was given, 0 included: GNU grep then separates groups with `--` even
    /// when no context line is printed (rule 2).
    pub context_given: bool,
}

/// The SGR of each field (rule 5: GNU grep's defaults).
const SGR_NAME: &str = "35";
const SGR_NUMBER: &str = "32";
const SGR_SEP: &str = "36";
const SGR_MATCH: &str = "01;31";

/// Prints listed records in GNU grep's format, file after file.
#[derive(Debug)]
pub struct GnuPrinter<W: Write> {
    out: W,
    opts: GnuOptions,
    name: Option<Vec<u8>>,
    /// The number of the current file, counted by `start_file`.
    file: u64,
    /// `(file, end)` of the last line printed, so that the next is known to be contiguous.
    last: Option<(u64, u64)>,
    /// Unprinted context lines, contiguous, at most `before`: candidates for before-context.
    ring: VecDeque<RecordMatch>,
    after_left: usize,
    binary_matched: bool,
}

impl<W: Write> GnuPrinter<W> {
    /// A printer writing to `out`.
    pub fn new(out: W, opts: GnuOptions) -> GnuPrinter<W> {
        GnuPrinter {
            out,
            opts,
            name: None,
            file: 0,
            last: None,
            ring: VecDeque::new(),
            after_left: 0,
            binary_matched: false,
        }
    }

    /// Starts the next file; `name` prefixes its lines when given (rule 1).
    pub fn start_file(&mut self, name: Option<&[u8]>) {
        self.name = name.map(<[u8]>::to_vec);
        self.file += 1;
        self.ring.clear();
        self.after_left = 0;
        self.binary_matched = false;
    }

    /// Returns true if and only if the file's output stopped at a binary match (rule 4).
    pub fn finish_file(&mut self) -> bool {
        self.binary_matched
    }

    /// The writer, to flush or reuse.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// Takes the next listed record of the current file, in file order.
    pub fn record(&mut self, m: &RecordMatch) -> io::Result<()> {
        if self.binary_matched {
            return Ok(());
        }
        if m.binary && !self.opts.text {
            self.binary_matched = m.selected;
            return Ok(());
        }
        let here = Some((self.file, m.offset));
        if m.selected {
            if self.ring.back().is_some_and(|r| r.end != m.offset) {
                self.ring.clear();
            }
            let first = self.ring.front().map_or(m.offset, |r| r.offset);
            let context = self.opts.context_given || self.opts.before > 0 || self.opts.after > 0;
            if context && self.last.is_some() && self.last != Some((self.file, first)) {
                self.paint(SGR_SEP, b"--")?;
                self.out.write_all(b"\n")?;
            }
            while let Some(r) = self.ring.pop_front() {
                self.line(&r, b'-')?;
            }
            self.line(m, b':')?;
            self.after_left = self.opts.after;
        } else if self.after_left > 0 && self.last == here {
            self.line(m, b'-')?;
            self.after_left -= 1;
        } else if self.opts.before > 0 {
            self.after_left = 0;
            if self.ring.back().is_some_and(|r| r.end != m.offset) {
                self.ring.clear();
            }
            self.ring.push_back(m.clone());
            if self.ring.len() > self.opts.before {
                self.ring.pop_front();
            }
        }
        Ok(())
    }

    fn line(&mut self, m: &RecordMatch, sep: u8) -> io::Result<()> {
        self.last = Some((self.file, m.end));
        if !self.opts.only_matching {
            self.prefix(m, sep, m.offset)?;
            if self.opts.color {
                let mut at = 0;
                for &(s, e) in &m.spans {
                    self.out.write_all(&m.record[at..s as usize])?;
                    self.paint(SGR_MATCH, &m.record[s as usize..e as usize])?;
                    at = e as usize;
                }
                self.out.write_all(&m.record[at..])?;
            } else {
                self.out.write_all(&m.record)?;
            }
            return self.out.write_all(b"\n");
        }
        if sep == b'-' {
            return Ok(());
        }
        for &(s, e) in &m.spans {
            self.prefix(m, sep, m.offset + u64::from(s))?;
            self.paint(SGR_MATCH, &m.record[s as usize..e as usize])?;
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }

    fn prefix(&mut self, m: &RecordMatch, sep: u8, offset: u64) -> io::Result<()> {
        if let Some(name) = self.name.take() {
            let written = self.paint(SGR_NAME, &name).and_then(|()| self.paint(SGR_SEP, &[sep]));
            self.name = Some(name);
            written?;
        }
        if self.opts.line_numbers {
            self.paint(SGR_NUMBER, m.line.to_string().as_bytes())?;
            self.paint(SGR_SEP, &[sep])?;
        }
        if self.opts.byte_offset {
            self.paint(SGR_NUMBER, offset.to_string().as_bytes())?;
            self.paint(SGR_SEP, &[sep])?;
        }
        Ok(())
    }

    /// Writes `bytes`, in the colour `sgr` with `color` (rule 5).
    fn paint(&mut self, sgr: &str, bytes: &[u8]) -> io::Result<()> {
        if self.opts.color && !bytes.is_empty() {
            write!(self.out, "\x1b[{sgr}m\x1b[K")?;
            self.out.write_all(bytes)?;
            self.out.write_all(b"\x1b[m\x1b[K")
        } else {
            self.out.write_all(bytes)
        }
    }

    /// Prints a `-l`/`-L` line: the file name (rule 5).
    pub fn name_line(&mut self, name: &[u8]) -> io::Result<()> {
        self.paint(SGR_NAME, name)?;
        self.out.write_all(b"\n")
    }

    /// Prints a `-c` line: `[NAME:]COUNT` (rule 5).
    pub fn count_line(&mut self, name: Option<&[u8]>, count: u64) -> io::Result<()> {
        if let Some(name) = name {
            self.paint(SGR_NAME, name)?;
            self.paint(SGR_SEP, b":")?;
        }
        writeln!(self.out, "{count}")
    }
}
