//! Cutting one read into whole records, and stitching the partial records at its ends with the
//! neighbours' into seam records.
//!
//! # Contract
//! 1. [`cut`] splits the bytes of one read at its first and last record boundary: `head` (the
//!    end of a record begun in an earlier read), `body` (whole records, handed to the kernel in
//!    place) and `tail` (the start of a record that ends in a later read). A read with no boundary
//!    inside lies wholly inside one record ([`Cut::Inside`]).
//! 2. A boundary is a stream offset where a record starts or the stream ends: offset 0, the byte
//!    after each delimiter (`Delimited`), every multiple of `n` (`Fixed(n)`), and the stream's
//!    length. Only the bytes of the read itself are looked at, so for `Delimited` the start of a
//!    read is not known to be a boundary (unless it is offset 0) and its first record goes to the
//!    head.
//! 3. [`Assembler::deposit`] takes the head and tail of every read, in any order, and emits each
//!    seam record exactly once, whole, as soon as every read it spans has been deposited: the
//!    tail of read `a`, every `Inside` read after it, and the head of the next read with a
//!    boundary. Empty seam records are not emitted.
//! 4. Pieces deposited in stream order (read `i` when reads `..i` are in) are copied once, straight
//!    into the seam record; pieces deposited early are copied into a pending fragment first, and
//!    `deposit` returns those extra bytes so the pipeline can count them.
//!
//! # Threads and costs
//! `Assembler` is `Sync`: one mutex, held for a copy of the head and tail (a record or two).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::RecordLayout;

/// Where a byte sits: stream offset, extent index, offset in the extent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pos {
    pub(crate) stream_offset: u64,
    pub(crate) extent: usize,
    pub(crate) extent_offset: u64,
}

impl Pos {
    /// The position `delta` bytes further in the same extent.
    pub(crate) fn plus(self, delta: usize) -> Pos {
        Pos {
            stream_offset: self.stream_offset + delta as u64,
            extent: self.extent,
            extent_offset: self.extent_offset + delta as u64,
        }
    }
}

/// How one read splits (rule 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cut {
    /// `data[..head_end]` is the head, `data[head_end..tail_start]` the body (whole records),
    /// `data[tail_start..]` the tail. `head_end <= tail_start`.
    Split { head_end: usize, tail_start: usize },
    /// No record boundary inside: the whole read is the middle of one record.
    Inside,
}

/// Cuts the `data` read at `stream_offset` of a stream of `stream_len` bytes (rules 1 and 2).
pub(crate) fn cut(layout: RecordLayout, stream_offset: u64, data: &[u8], stream_len: u64) -> Cut {
    let len = data.len();
    let end = stream_offset + len as u64;
    let at_start = stream_offset == 0;
    let at_end = end == stream_len;
    let (first, last) = match layout {
        RecordLayout::Fixed(n) => {
            let n = n.get() as u64;
            let first = (n - stream_offset % n) % n;
            let last = end - end % n;
            let first = (first <= len as u64).then_some(first as usize);
            let last = (last >= stream_offset).then(|| (last - stream_offset) as usize);
            (first, last)
        }
        RecordLayout::Delimited(b) => {
            let first = if at_start { Some(0) } else { memchr::memchr(b, data).map(|i| i + 1) };
            let last = memchr::memrchr(b, data).map(|i| i + 1).or(at_start.then_some(0));
            (first, last)
        }
    };
    let head_end = first.or(at_end.then_some(len));
    let tail_start = if at_end { Some(len) } else { last };
    match (head_end, tail_start) {
        (Some(head_end), Some(tail_start)) => Cut::Split { head_end, tail_start },
        _ => Cut::Inside,
    }
}

/// A piece of a seam record and where its first byte sits.
#[derive(Debug)]
pub(crate) struct Piece<'a> {
    pub(crate) bytes: Cow<'a, [u8]>,
    pub(crate) pos: Pos,
}

/// What one read contributes to the seams on either side of it.
#[derive(Debug)]
pub(crate) enum Fragment<'a> {
    /// The read has a boundary: its head ends one seam record, its tail starts the next.
    Split { head: Piece<'a>, tail: Piece<'a> },
    /// The read lies inside one record.
    Inside(Piece<'a>),
}

impl Fragment<'_> {
    fn into_owned(self) -> (Fragment<'static>, u64) {
        let own = |p: Piece<'_>| {
            let n = p.bytes.len() as u64;
            (Piece { bytes: Cow::Owned(p.bytes.into_owned()), pos: p.pos }, n)
        };
        match self {
            Fragment::Split { head, tail } => {
                let ((head, a), (tail, b)) = (own(head), own(tail));
                (Fragment::Split { head, tail }, a + b)
            }
            Fragment::Inside(p) => {
                let (p, a) = own(p);
                (Fragment::Inside(p), a)
            }
        }
    }
}

/// What applying the fragment of read `read` gave: the seam record its head completed, if that
/// record is not empty.
#[derive(Debug)]
pub(crate) struct Applied {
    pub(crate) read: usize,
    pub(crate) record: Option<SeamRecord>,
}

/// A stitched record ready for the kernel.
#[derive(Debug)]
pub(crate) struct SeamRecord {
    pub(crate) bytes: Vec<u8>,
    pub(crate) pos: Pos,
    /// Non-empty pieces it was made of; more than one means it spans reads.
    pub(crate) pieces: usize,
}

/// See the module contract (rules 3 and 4).
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The read whose fragment the open seam record needs next.
    next: usize,
    /// Fragments of reads after `next`, deposited early.
    pending: BTreeMap<usize, Fragment<'static>>,
    open: Vec<u8>,
    open_pos: Option<Pos>,
    open_pieces: usize,
}

impl State {
    fn append(&mut self, piece: &Piece<'_>) {
        if piece.bytes.is_empty() {
            return;
        }
        if self.open.is_empty() {
            self.open_pos = Some(piece.pos);
        }
        self.open.extend_from_slice(&piece.bytes);
        self.open_pieces += 1;
    }

    fn apply(&mut self, fragment: &Fragment<'_>, out: &mut Vec<Applied>) {
        let mut record = None;
        match fragment {
            Fragment::Split { head, tail } => {
                self.append(head);
                if !self.open.is_empty() {
                    record = Some(SeamRecord {
                        bytes: std::mem::take(&mut self.open),
                        pos: self.open_pos.take().expect("open record has a start"),
                        pieces: self.open_pieces,
                    });
                }
                self.open_pieces = 0;
                self.append(tail);
            }
            Fragment::Inside(piece) => self.append(piece),
        }
        out.push(Applied { read: self.next, record });
        self.next += 1;
    }
}

impl Assembler {
    /// Deposits the fragment of read `index`. Appends to `out` one [`Applied`] for every read
    /// whose fragment this lets the assembler apply (in read order; each read exactly once over
    /// the run), with the seam record that read's head completed. Returns the bytes copied into a
    /// pending fragment (rule 4).
    pub(crate) fn deposit(
        &self,
        index: usize,
        fragment: Fragment<'_>,
        out: &mut Vec<Applied>,
    ) -> u64 {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if index != state.next {
            debug_assert!(index > state.next, "read {index} deposited twice");
            let (owned, copied) = fragment.into_owned();
            state.pending.insert(index, owned);
            return copied;
        }
        state.apply(&fragment, out);
        while let Some(early) = {
            let next = state.next;
            state.pending.remove(&next)
        } {
            state.apply(&early, out);
        }
        0
    }

    /// Returns true if and only if every read up to `reads` was deposited and no record is left
    /// open (holds after a complete run, by rule 2: the stream's end is a boundary).
    pub(crate) fn is_complete(&self, reads: usize) -> bool {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.next == reads && state.pending.is_empty() && state.open.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::num::NonZeroUsize;

    fn pos(at: u64) -> Pos {
        Pos { stream_offset: at, extent: 0, extent_offset: at }
    }

    #[test]
    fn cut_delimited_splits_at_first_and_last_delimiter() {
        let l = RecordLayout::Delimited(b'\n');
        assert_eq!(cut(l, 10, b"ab\ncd\nef", 100), Cut::Split { head_end: 3, tail_start: 6 });
        assert_eq!(cut(l, 0, b"ab\ncd\nef", 100), Cut::Split { head_end: 0, tail_start: 6 });
        assert_eq!(cut(l, 92, b"ab\ncd\nef", 100), Cut::Split { head_end: 3, tail_start: 8 });
        assert_eq!(cut(l, 10, b"abcdef", 100), Cut::Inside);
        assert_eq!(cut(l, 94, b"abcdef", 100), Cut::Split { head_end: 6, tail_start: 6 });
    }

    #[test]
    fn cut_fixed_uses_stream_offsets() {
        let l = RecordLayout::Fixed(NonZeroUsize::new(4).unwrap());
        assert_eq!(cut(l, 0, &[0; 10], 100), Cut::Split { head_end: 0, tail_start: 8 });
        assert_eq!(cut(l, 6, &[0; 10], 100), Cut::Split { head_end: 2, tail_start: 10 });
        assert_eq!(cut(l, 5, &[0; 2], 100), Cut::Inside);
        assert_eq!(cut(l, 97, &[0; 3], 100), Cut::Split { head_end: 3, tail_start: 3 });
    }

    #[test]
    fn assembler_emits_each_seam_record_once_in_any_deposit_order() {
        // Stream "aaa|\nbb|bbb|b\nc" cut in reads of 3 bytes: record "aaa\n" spans reads 0-1,
        // "bbbbbb\n" spans reads 1-3 (read 2 is inside it), and "c" is the body of read 3.
        let stream = b"aaa\nbbbbbb\nc";
        let l = RecordLayout::Delimited(b'\n');
        let reads: Vec<(usize, &[u8])> =
            stream.chunks(3).enumerate().map(|(i, c)| (i * 3, c)).collect();
        for order in [[0, 1, 2, 3], [3, 2, 1, 0], [1, 3, 0, 2]] {
            let asm = Assembler::default();
            let mut out = Vec::new();
            let mut copied = 0;
            for &i in &order {
                let (at, data) = reads[i];
                let frag = match cut(l, at as u64, data, stream.len() as u64) {
                    Cut::Split { head_end, tail_start } => Fragment::Split {
                        head: Piece {
                            bytes: Cow::Borrowed(&data[..head_end]),
                            pos: pos(at as u64),
                        },
                        tail: Piece {
                            bytes: Cow::Borrowed(&data[tail_start..]),
                            pos: pos((at + tail_start) as u64),
                        },
                    },
                    Cut::Inside => {
                        Fragment::Inside(Piece { bytes: Cow::Borrowed(data), pos: pos(at as u64) })
                    }
                };
                copied += asm.deposit(i, frag, &mut out);
            }
            assert!(asm.is_complete(reads.len()));
            assert_eq!(out.iter().map(|a| a.read).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
            let got: Vec<(&[u8], u64, usize)> = out
                .iter()
                .filter_map(|a| a.record.as_ref())
                .map(|r| (&r.bytes[..], r.pos.stream_offset, r.pieces))
                .collect();
            assert_eq!(got, vec![(&b"aaa\n"[..], 0, 2), (&b"bbbbbb\n"[..], 4, 3)], "{order:?}");
            if order[0] == 0 && order[1] == 1 {
                assert_eq!(copied, 0);
            }
        }
    }
}
