//! Cutting a plan into reads (contract rule 1 of `pipeline.rs`), computed on demand.

use crate::Plan;
use crate::pool::ALIGN;
use crate::stitch::Pos;

use super::files::OpenFile;

/// One read: a piece of one extent (contract rule 1).
#[derive(Debug, Clone, Copy)]
pub(super) struct Chunk {
    pub(super) index: usize,
    pub(super) file: usize,
    pub(super) extent: usize,
    pub(super) stream_offset: u64,
    pub(super) extent_offset: u64,
    /// Bytes of the plan in this read.
    pub(super) len: usize,
    /// File offset the read starts at.
    pub(super) read_offset: u64,
    /// Bytes asked of the file (aligned up for O_DIRECT).
    pub(super) read_len: usize,
    /// The plan's bytes start at `buf[skip]`.
    pub(super) skip: usize,
    /// File offset where the extent ends (for short-read errors).
    pub(super) extent_end: u64,
}

impl Chunk {
    pub(super) fn pos(&self) -> Pos {
        Pos {
            stream_offset: self.stream_offset,
            extent: self.extent,
            extent_offset: self.extent_offset,
        }
    }
}

#[derive(Debug)]
struct ExtentReads {
    extent: usize,
    file: usize,
    direct: bool,
    stream_start: u64,
    offset: u64,
    len: u64,
    /// `offset` rounded down to [`ALIGN`]: reads start at `base + k × block_size`.
    base: u64,
    first_read: usize,
}

/// The reads of a plan, computed on demand (a terabyte plan has millions).
#[derive(Debug)]
pub(super) struct ChunkMap {
    extents: Vec<ExtentReads>,
    block_size: usize,
    total: usize,
}

impl ChunkMap {
    pub(super) fn new(
        plan: &Plan,
        files: &[OpenFile],
        of_extent: &[usize],
        block_size: usize,
    ) -> ChunkMap {
        let mut extents = Vec::new();
        let (mut stream, mut reads) = (0u64, 0usize);
        for (i, e) in plan.extents().iter().enumerate() {
            if e.len > 0 {
                let base = e.offset / ALIGN as u64 * ALIGN as u64;
                let n = (e.offset + e.len - base).div_ceil(block_size as u64) as usize;
                let file = of_extent[i];
                extents.push(ExtentReads {
                    extent: i,
                    file,
                    direct: files[file].direct,
                    stream_start: stream,
                    offset: e.offset,
                    len: e.len,
                    base,
                    first_read: reads,
                });
                reads += n;
            }
            stream += e.len;
        }
        ChunkMap { extents, block_size, total: reads }
    }

    /// Number of reads.
    pub(super) fn total(&self) -> usize {
        self.total
    }

    /// Read `j` (`j < total`).
    pub(super) fn chunk(&self, j: usize) -> Chunk {
        let at = self.extents.partition_point(|e| e.first_read <= j) - 1;
        let e = &self.extents[at];
        let bs = self.block_size as u64;
        let start = e.base + (j - e.first_read) as u64 * bs;
        let need_start = start.max(e.offset);
        let need_end = (start + bs).min(e.offset + e.len);
        let (read_offset, read_len, skip) = if e.direct {
            let end = need_end.div_ceil(ALIGN as u64) * ALIGN as u64;
            (start, (end - start) as usize, (need_start - start) as usize)
        } else {
            (need_start, (need_end - need_start) as usize, 0)
        };
        Chunk {
            index: j,
            file: e.file,
            extent: e.extent,
            stream_offset: e.stream_start + (need_start - e.offset),
            extent_offset: need_start - e.offset,
            len: (need_end - need_start) as usize,
            read_offset,
            read_len,
            skip,
            extent_end: e.offset + e.len,
        }
    }
}
