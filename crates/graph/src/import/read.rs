//! Reading every edge file in chunks of whole lines or records, for passes 1 and 2: plain files
//! through the block pipeline (parallel, results in stream order), gzip files through one
//! decoder (sequential). A parse failure becomes an error naming `file:line` or the record.

use std::fs::File;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};

use sluice_io::{Block, BlockKernel, Pipeline, Plan, RecordLayout};

use super::Progress;
use super::describe::{EdgeFile, FileKind, Source, TextStyle};
use super::parse::{ParseFail, RawEdges, TextRules, parse_bin, parse_text};
use crate::Error;

/// What a pass does with the edges of one chunk: its result, or `(i, message)` about edge `i`
/// of the chunk.
pub(super) type PerChunk<'a, T> = dyn Fn(RawEdges) -> Result<T, (usize, String)> + Sync + 'a;

/// Parses a chunk that starts at the given byte of its file.
type ParseChunk<'a> = dyn Fn(&[u8], u64) -> Result<RawEdges, ParseFail> + Sync + 'a;

/// Opens a text edge file, through a gzip decoder when it is compressed.
pub(super) fn open_text(f: &EdgeFile) -> Result<Box<dyn Read>, Error> {
    let file = File::open(&f.path).map_err(|e| Error::io(&f.path, "cannot open", e))?;
    Ok(if f.gz { Box::new(flate2::read::MultiGzDecoder::new(file)) } else { Box::new(file) })
}

/// Turns a parse failure into an error naming `file:line` (text) or the record (binary).
fn fail_to_error(f: &EdgeFile, fail: ParseFail) -> Error {
    match f.kind {
        FileKind::Bin { .. } => Error::BadRecord {
            path: f.path.clone(),
            record: fail.offset / f.kind.record_bytes(),
            offset: fail.offset,
            msg: fail.msg,
        },
        FileKind::Text { .. } => {
            let line = line_of(f, fail.offset).unwrap_or(0);
            Error::Parse { path: f.path.clone(), line, msg: fail.msg }
        }
    }
}

/// 1-based line number of byte `offset` (of the decompressed text).
fn line_of(f: &EdgeFile, offset: u64) -> Result<u64, Error> {
    let mut r = open_text(f)?.take(offset);
    let mut buf = vec![0u8; 1 << 16];
    let mut lines = 1u64;
    loop {
        let k = r.read(&mut buf).map_err(|e| Error::io(&f.path, "read failed", e))?;
        if k == 0 {
            return Ok(lines);
        }
        lines += memchr::memchr_iter(b'\n', &buf[..k]).count() as u64;
    }
}

/// Runs `per_chunk` over every piece of every edge file, in stream order, with `sink`
/// receiving each result on the calling thread. Plain files go through the block pipeline
/// (parallel); gzip files are decompressed sequentially; edges in memory are read in place
/// ([`super::arrays`], their bytes added to `progress`).
pub(super) fn for_each_chunk<T: Send>(
    source: &Source<'_>,
    pipeline: &Pipeline,
    progress: Option<&Progress>,
    per_chunk: &PerChunk<'_, T>,
    sink: &mut dyn FnMut(T),
) -> Result<(), Error> {
    if let Some(a) = &source.arrays {
        return super::arrays::for_each_chunk(a, pipeline, progress, per_chunk, sink);
    }
    for f in &source.files {
        let rules = TextRules {
            comment: match f.kind {
                FileKind::Text { style: TextStyle::Snap, .. } => Some(b'#'),
                FileKind::Text { style: TextStyle::Mtx, .. } => Some(b'%'),
                _ => None,
            },
            weighted: source.weighted,
            id_max: source.id_max,
            id_bytes: source.id_bytes,
            mtx: source.mtx.map(|(r, c, _)| (r, c)),
        };
        let parse = |data: &[u8], base: u64| -> Result<RawEdges, ParseFail> {
            match f.kind {
                FileKind::Text { .. } => parse_text(data, base, &rules),
                // Ids are read `id_bytes` wide, so every one fits `id_max` (rule 2).
                FileKind::Bin { id_bytes, weight } => parse_bin(data, base, id_bytes, weight),
            }
        };
        let mut first_fail: Option<ParseFail> = None;
        if f.gz {
            let mut r = open_text(f)?;
            let mut carry: Vec<u8> = Vec::new();
            let mut base = 0u64;
            let mut buf = vec![0u8; 4 << 20];
            loop {
                let k =
                    r.read(&mut buf).map_err(|e| Error::io(&f.path, "decompression failed", e))?;
                carry.extend_from_slice(&buf[..k]);
                let cut = if k == 0 {
                    carry.len()
                } else {
                    memchr::memrchr(b'\n', &carry).map_or(0, |i| i + 1)
                };
                if cut > 0 {
                    let piece: Vec<u8> = carry.drain(..cut).collect();
                    let res = parse(&piece, base)
                        .and_then(|raw| run_chunk(per_chunk, raw, base, f.kind.record_bytes()));
                    base += piece.len() as u64;
                    match res {
                        Ok(t) => sink(t),
                        Err(e) => return Err(fail_to_error(f, e)),
                    }
                }
                if k == 0 {
                    break;
                }
            }
            continue;
        }
        let (layout, offset) = match f.kind {
            FileKind::Text { data_offset, .. } => (RecordLayout::Delimited(b'\n'), data_offset),
            FileKind::Bin { .. } => {
                let rec = std::num::NonZeroUsize::new(f.kind.record_bytes() as usize)
                    .unwrap_or(std::num::NonZeroUsize::MIN);
                (RecordLayout::Fixed(rec), 0)
            }
        };
        let len =
            std::fs::metadata(&f.path).map_err(|e| Error::io(&f.path, "cannot stat", e))?.len();
        let mut plan = Plan::new(layout);
        if len > offset {
            plan.push_extent(&f.path, offset, len - offset)?;
        }
        struct K<'a, T> {
            parse: &'a ParseChunk<'a>,
            per_chunk: &'a PerChunk<'a, T>,
            offset: u64,
            rec: u64,
        }
        impl<T: Send> BlockKernel for K<'_, T> {
            type Partial = Result<T, ParseFail>;
            fn process(&self, b: &Block<'_>) -> Self::Partial {
                let base = self.offset + b.stream_offset;
                let raw = (self.parse)(b.data, base)?;
                run_chunk(self.per_chunk, raw, base, self.rec)
            }
        }
        let kernel = K { parse: &parse, per_chunk, offset, rec: f.kind.record_bytes() };
        let stop = AtomicBool::new(false);
        pipeline.run_ordered(&plan, &kernel, |p| {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            match p {
                Ok(t) => sink(t),
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    first_fail = Some(e);
                }
            }
        })?;
        if let Some(e) = first_fail {
            return Err(fail_to_error(f, e));
        }
    }
    Ok(())
}

/// Runs `per_chunk`, turning an error about edge `i` into a failure at that edge's offset.
fn run_chunk<T>(
    per_chunk: &PerChunk<'_, T>,
    mut raw: RawEdges,
    base: u64,
    rec: u64,
) -> Result<T, ParseFail> {
    let offsets = std::mem::take(&mut raw.offsets);
    per_chunk(raw).map_err(|(i, msg)| ParseFail {
        offset: offsets.get(i).copied().unwrap_or(base + i as u64 * rec),
        msg,
    })
}
