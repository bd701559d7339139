//! `grep` over one shared file on every process of a BSP section (`dist` rules 1–3): each
//! process searches its stripe (delimited records: stripes start at record starts, so a record
//! that straddles a nominal boundary is searched once, whole; fixed records: stripes of whole
//! records), the counts are allgathered, and with listing the matched records travel to rank 0
//! in rank order, which is global byte order.
//!
//! # Zero copy (issue 12 item 4)
//! The kernel keeps a block's selected records where the pipeline read them: it holds the
//! block's pool buffer ([`sluice_io::BlockBuffer::hold`]) when the records are at least
//! [`HOLD_SHARE`] of the block, and `zero_copy` puts them from that buffer to rank 0. Records
//! of a seam, of a mapped file, of the sync engine, of a sparse block, or refused a hold (the
//! pool keeps half its buffers circulating) are copied out of the block instead; those copies
//! are counted in the report's `user_copy_bytes`, the bytes put without one in
//! `zero_copy_sent_bytes`.

use std::path::Path;

use serde::{Serialize, Serializer};
use sluice_bsp::Ctx;
use sluice_io::placement::{self, Piece};
use sluice_io::{
    Block, BlockBuffer, BlockKernel, Budget, HeldBytes, Pipeline, Plan, RecordLayout, Reservation,
    RunStats,
};

use super::exchange::{Words, agree, put};
use super::lines;
use crate::Error;
use crate::grep::{GrepConfig, GrepKernel, escape_bytes};

/// A block is held when its selected records (with their delimiters) are at least this share
/// of it; sparser matches are copied, which costs less than keeping a whole buffer out of the
/// pipeline for a few lines.
pub const HOLD_SHARE: f64 = 1.0 / 16.0;

/// Budget charged per listed record for its place in the lists.
const UNIT_OVERHEAD_BYTES: u64 = 48;

/// What a distributed grep found, with the fields and key order of
/// [`GrepReport`](crate::GrepReport) less the listed matches (handed to the callback instead),
/// plus what crossed between processes.
#[derive(Debug, Serialize)]
pub struct DistGrepReport {
    /// The figure asked for: matching records, or matches with `count_matches`.
    pub count: u64,
    /// `records` or `matches`: what `count` counts.
    pub counting: &'static str,
    /// Records with at least one match.
    pub records_matched: u64,
    /// Every match (only counted with `count_matches`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matches_total: Option<u64>,
    /// Statistics of rank 0's pass, except `copies.user_copy_bytes` and `copies.seam_bytes`:
    /// those of every rank (`user_copy_bytes` with the listed records copied out of blocks).
    pub run: RunStats,
    /// Bytes of listed records sent to rank 0 by the other ranks.
    pub transfer: Transfer,
}

/// Bytes of listed records that ranks other than 0 sent to rank 0 (each record with its
/// delimiter where the file has one).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Transfer {
    /// Put straight from the pool buffers the pipeline read them into.
    pub zero_copy_sent_bytes: u64,
    /// Put from a copy (a seam, a mapped file, a sparse block: see the module doc).
    pub copied_sent_bytes: u64,
}

/// A listed record as rank 0 hands it to the caller: its file offset and its bytes (without
/// the delimiter). Serialises as [`RecordMatch`](crate::RecordMatch) does.
#[derive(Debug, Clone, Copy)]
pub struct Listed<'a> {
    /// Byte offset of the record in the file.
    pub offset: u64,
    /// The record's bytes.
    pub record: &'a [u8],
}

impl Serialize for Listed<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("RecordMatch", 2)?;
        st.serialize_field("offset", &self.offset)?;
        st.serialize_field("record", &escape_bytes(self.record))?;
        st.end()
    }
}

/// The bytes a block's listed records lie in.
#[derive(Debug)]
pub(super) enum Src {
    /// The block's pool buffer (no copy).
    Held(HeldBytes),
    /// The records, copied out of the block one after another.
    Copied(Vec<u8>),
}

impl Src {
    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            Src::Held(h) => h.bytes(),
            Src::Copied(v) => v,
        }
    }
}

/// One listed record: its file offset, where it starts in its block's [`Src`], its length and
/// its length with the delimiter (what travels).
#[derive(Debug, Clone, Copy)]
pub(super) struct Unit {
    pub(super) offset: u64,
    pub(super) at: usize,
    pub(super) record: usize,
    pub(super) len: usize,
}

/// A block's listed records.
#[derive(Debug)]
pub(super) struct Found {
    pub(super) src: Src,
    pub(super) units: Vec<Unit>,
    _budget: Reservation,
}

/// One block's partial: records selected, matches, the listed records.
type BlockFound = (u64, u64, Option<Found>);

/// [`GrepKernel`]'s search, keeping the listed records in the block's buffer where it can.
struct Keeping<'a> {
    grep: GrepKernel,
    list: bool,
    budget: &'a Budget,
}

impl BlockKernel for Keeping<'_> {
    type Partial = Result<BlockFound, Error>;

    fn process(&self, block: &Block<'_>) -> Self::Partial {
        self.process_in(block, &BlockBuffer::NONE)
    }

    fn process_in(&self, block: &Block<'_>, buffer: &BlockBuffer<'_>) -> Self::Partial {
        let (selected, matches) = self.grep.select_ranges(block.data);
        let records = selected.len() as u64;
        if !self.list || selected.is_empty() {
            return Ok((records, matches, None));
        }
        let bytes: usize = selected.iter().map(|r| r.2 - r.0).sum();
        let dense = bytes as f64 >= HOLD_SHARE * block.data.len() as f64;
        let held = if dense { buffer.hold() } else { None };
        let mut units = Vec::with_capacity(selected.len());
        let src = match held {
            Some(h) => {
                units.extend(selected.iter().map(|&(start, end, next)| Unit {
                    offset: block.stream_offset + start as u64,
                    at: start,
                    record: end - start,
                    len: next - start,
                }));
                Src::Held(h)
            }
            None => {
                let mut copy = Vec::with_capacity(bytes);
                for &(start, end, next) in &selected {
                    units.push(Unit {
                        offset: block.stream_offset + start as u64,
                        at: copy.len(),
                        record: end - start,
                        len: next - start,
                    });
                    copy.extend_from_slice(&block.data[start..next]);
                }
                Src::Copied(copy)
            }
        };
        let copied = if matches!(src, Src::Copied(_)) { bytes as u64 } else { 0 };
        let charge = copied + units.len() as u64 * UNIT_OVERHEAD_BYTES;
        let budget = self.budget.reserve("the matching records", charge)?;
        Ok((records, matches, Some(Found { src, units, _budget: budget })))
    }
}

/// Figures of one process's pass, exchanged in one allgather.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Figures {
    pub(super) records: u64,
    pub(super) matches: u64,
    /// Bytes of listed records (with delimiters), held and copied.
    pub(super) held_bytes: u64,
    pub(super) copied_bytes: u64,
    /// Puts that send them (one per run of adjacent records in one block).
    pub(super) puts: u64,
    /// Bytes this process copied: its pipeline's, and the listed records copied out of blocks.
    pub(super) user_copy_bytes: u64,
    /// Bytes its pipeline stitched at seams.
    pub(super) seam_bytes: u64,
}

impl Figures {
    const WORDS: usize = 7;

    fn words(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 * Self::WORDS);
        let f = self;
        let words = [
            f.records,
            f.matches,
            f.held_bytes,
            f.copied_bytes,
            f.puts,
            f.user_copy_bytes,
            f.seam_bytes,
        ];
        words.into_iter().for_each(|x| put(&mut out, x));
        out
    }

    fn read(bytes: &[u8]) -> Figures {
        let mut w = Words(bytes);
        let mut next = || w.next();
        Figures {
            records: next(),
            matches: next(),
            held_bytes: next(),
            copied_bytes: next(),
            puts: next(),
            user_copy_bytes: next(),
            seam_bytes: next(),
        }
    }
}

/// Searches `path` on every process of `ctx`'s section (collective). Unless `config.count`,
/// `on_match` runs on rank 0 for every matching record in file order (offsets are file
/// offsets); every process returns the same counts.
pub fn grep<F>(
    ctx: &mut Ctx,
    path: &Path,
    config: &GrepConfig,
    pipeline: &Pipeline,
    budget: &Budget,
    on_match: F,
) -> Result<DistGrepReport, Error>
where
    F: FnMut(Listed<'_>) -> Result<(), Error>,
{
    let (rank, p) = (ctx.pid() as usize, ctx.nprocs() as usize);
    let (payload, local) = match search(path, config, pipeline, budget, rank, p) {
        Ok(x) => (Ok(x.0.words()), Some(x)),
        Err(e) => (Err(e), None),
    };
    let all = agree(ctx, payload)?;
    let (_, found, mut run) = local.expect("agree returned Ok");
    let all: Vec<Figures> = all.iter().map(|w| Figures::read(w)).collect();
    let (records, matches) = all.iter().fold((0, 0), |(r, m), f| (r + f.records, m + f.matches));
    let sent = &all[1..];
    let transfer = Transfer {
        zero_copy_sent_bytes: sent.iter().map(|f| f.held_bytes).sum(),
        copied_sent_bytes: sent.iter().map(|f| f.copied_bytes).sum(),
    };
    run.copies.user_copy_bytes = all.iter().map(|f| f.user_copy_bytes).sum();
    run.copies.seam_bytes = all.iter().map(|f| f.seam_bytes).sum();
    if !config.count {
        lines::gather(ctx, &found, &all, budget, on_match)?;
    }
    drop(found); // gives the held buffers back, after the sync that sent them
    Ok(DistGrepReport {
        count: if config.count_matches { matches } else { records },
        counting: if config.count_matches { "matches" } else { "records" },
        records_matched: records,
        matches_total: config.count_matches.then_some(matches),
        run,
        transfer,
    })
}

/// This process's stripe of `path`, searched: its figures, the listed records block by block
/// in file order (offsets are file offsets), the pass's figures.
fn search(
    path: &Path,
    config: &GrepConfig,
    pipeline: &Pipeline,
    budget: &Budget,
    rank: usize,
    p: usize,
) -> Result<(Figures, Vec<Found>, RunStats), Error> {
    let grep = GrepKernel::new(config, budget.clone())?;
    let layout = config.layout()?;
    let len = std::fs::metadata(path)
        .map_err(|source| Error::Io(sluice_io::Error::Open { path: path.to_path_buf(), source }))?
        .len();
    let piece = match layout {
        RecordLayout::Delimited(b) => placement::delimited_stripe(path, 0, len, b, rank, p)?,
        RecordLayout::Fixed(n) => {
            let n = n.get() as u64;
            let own = placement::balanced(len.div_ceil(n), rank, p);
            let (start, end) = ((own.start * n).min(len), (own.end * n).min(len));
            Piece { path: path.to_path_buf(), offset: start, len: end - start, first_read: 0 }
        }
    };
    let mut plan = Plan::new(layout);
    if piece.len > 0 {
        plan.push_extent(path, piece.offset, piece.len)?;
    }
    let kernel = Keeping { grep, list: !config.count, budget };
    let (mut figures, mut found, mut failed) = (Figures::default(), Vec::new(), None);
    let run = pipeline.run_ordered(&plan, &kernel, |partial| match partial {
        Ok((records, matches, listed)) => {
            figures.records += records;
            figures.matches += matches;
            if let Some(mut f) = listed {
                // Stream offsets count from the stripe's start; report file offsets.
                f.units.iter_mut().for_each(|u| u.offset += piece.offset);
                let bytes: u64 = f.units.iter().map(|u| u.len as u64).sum();
                match f.src {
                    Src::Held(_) => figures.held_bytes += bytes,
                    Src::Copied(_) => figures.copied_bytes += bytes,
                }
                figures.puts += lines::runs(&f.units).count() as u64;
                found.push(f);
            }
        }
        Err(e) => {
            failed.get_or_insert(e);
        }
    })?;
    if let Some(e) = failed {
        return Err(Error::Listing { path: path.to_path_buf(), source: Box::new(e) });
    }
    figures.user_copy_bytes = run.copies.user_copy_bytes + figures.copied_bytes;
    figures.seam_bytes = run.copies.seam_bytes;
    Ok((figures, found, run))
}
