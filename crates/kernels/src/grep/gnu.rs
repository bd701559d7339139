//! GNU grep's output format for the records a pass lists (checked byte for byte against GNU grep
//! 3.8 by `tests/python/test_grep_gnu.py`).
//!
//! # Contract
//! 1. A selected line prints as `[NAME:][LINE:][OFFSET:]BYTES\n`, a context line with `-` in
//!    place of each `:` (grep(1), "Output Line Prefix Fields"); the name only when the printer
//!    was given one, the line number with `line_numbers`, the byte offset with `byte_offset`.
//! 2. With context, a line `--` separates two groups of printed lines that are not contiguous,
//!    within a file and across files; a group holds each selected line with up to `before`
//!    lines before it and `after` after it (those the pass listed and that are contiguous).
//! 3. With `only_matching`, a selected line prints each non-empty match on its own line, the
//!    byte offset being the match's; context lines are not printed, but they still join groups.
//! 4. Unless `text`, the first selected record marked binary ends the file's output:
//!    [`GnuPrinter::finish_file`] then returns true, and the caller says that the binary file
//!    matches, as GNU grep does on standard error.

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
}

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
            let context = self.opts.before > 0 || self.opts.after > 0;
            if context && self.last.is_some() && self.last != Some((self.file, first)) {
                self.out.write_all(b"--\n")?;
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
            self.out.write_all(&m.record)?;
            return self.out.write_all(b"\n");
        }
        if sep == b'-' {
            return Ok(());
        }
        for &(s, e) in &m.spans {
            self.prefix(m, sep, m.offset + u64::from(s))?;
            self.out.write_all(&m.record[s as usize..e as usize])?;
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }

    fn prefix(&mut self, m: &RecordMatch, sep: u8, offset: u64) -> io::Result<()> {
        if let Some(name) = &self.name {
            self.out.write_all(name)?;
            self.out.write_all(&[sep])?;
        }
        if self.opts.line_numbers {
            write!(self.out, "{}{}", m.line, sep as char)?;
        }
        if self.opts.byte_offset {
            write!(self.out, "{offset}{}", sep as char)?;
        }
        Ok(())
    }
}
