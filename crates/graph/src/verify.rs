//! `sluice graph verify`: checks a whole store.
//!
//! # Memory
//! 24 bytes per vertex (ids, both degree arrays and the degrees counted from the edges) plus 8
//! more while the id file is decoded, the grid indexes, and fixed 1 MiB read buffers: edge and
//! weight blocks are read and checked in pieces, so no block, however large, is held whole.
//! All of it is reserved from the budget before it is allocated; a budget that cannot hold the
//! vertex arrays is refused with the bytes needed (issue 17 item 13: every subcommand honours
//! `--memory`).

use std::fs::File;
use std::io::Read;
use std::path::Path;

use sluice_io::Budget;

use crate::Error;
use crate::store::weights::{self, WEIGHT_BYTES};
use crate::store::{self, EDGE_BYTES, GridIndex, invariants};

/// Bytes of each read buffer (edges and weights, each).
const CHUNK: usize = 1 << 20;
// A piece of a packed block is whole frames.
const _: () = assert!(CHUNK.is_multiple_of(store::packed::FRAME_BYTES));

/// What [`verify`] checked.
#[derive(Debug, Clone)]
pub struct VerifyReport {
    /// Files whose length and CRC-32 matched `meta.json`.
    pub files: usize,
    /// Blocks whose CRC-32 matched the index.
    pub blocks: u64,
    /// Edges whose ids were checked to lie inside their partitions.
    pub edges: u64,
    /// Bytes read.
    pub bytes: u64,
}

/// [`verify_within`] an unlimited budget.
pub fn verify(dir: &Path) -> Result<VerifyReport, Error> {
    verify_within(dir, &Budget::unlimited())
}

/// Checks `meta.json` (its own checksum and version), the length and CRC-32 of every file, every
/// block's CRC-32 (edges and weights), that every stored id lies inside its partition, that ids are strictly
/// increasing, the structural invariants of `store::invariants` (both rules: every vertex's
/// degrees are counted from the edges). The first fault is the error. Memory: see the module
/// doc; what does not fit `budget` is [`Error::Pipeline`] (`OverBudget`) before any allocation.
pub fn verify_within(dir: &Path, budget: &Budget) -> Result<VerifyReport, Error> {
    // `meta.json` is read whole (its bytes and the parsed map): its length, reserved first.
    let meta_len = std::fs::symlink_metadata(dir.join("meta.json")).map_or(0, |m| m.len());
    let meta_res = budget.reserve("meta.json", meta_len.saturating_mul(3))?;
    let meta = store::read_meta(dir)?;
    drop(meta_res);
    let n = meta.num_vertices as usize;
    let p = meta.partitions;
    let grids: &[&str] = if meta.directed { &["fwd", "rev"] } else { &["fwd"] };
    // Reserved before anything else is read, in one reservation, so that a refusal names the whole need: the file checksums' 4 MiB buffer
    // (`store::file_sum`), the edge and weight pieces, the indexes (u64 offsets and two u32
    // CRCs per block, with their bytes while decoded) and the vertex arrays.
    let index_bytes = p.saturating_mul(p).saturating_mul(32).saturating_add(16);
    let need = ((4u64 << 20) + 2 * CHUNK as u64)
        .saturating_add(index_bytes.saturating_mul(grids.len() as u64))
        .saturating_add((n as u64).saturating_mul(32));
    let _memory = budget.reserve("vertex ids and degrees, grid indexes and read buffers", need)?;
    let mut report = VerifyReport { files: 0, blocks: 0, edges: 0, bytes: 0 };
    for (name, sum) in &meta.files {
        let path = dir.join(name);
        let got = store::file_sum(&path)?;
        if got.len != sum.len {
            return Err(Error::corrupt(
                &path,
                format!("{} bytes, meta.json says {}", got.len, sum.len),
            ));
        }
        if got.crc32 != sum.crc32 {
            return Err(Error::corrupt(
                &path,
                format!("checksum mismatch (stored {:08x}, computed {:08x})", sum.crc32, got.crc32),
            ));
        }
        report.files += 1;
        report.bytes += got.len;
    }
    // The vertex files are read whole: their listed lengths (just checked against the files)
    // must be what the reservation above covers.
    for (name, width) in [("ids.bin", 8u64), ("out_degree.bin", 4), ("in_degree.bin", 4)] {
        let listed = meta.files.get(name).map(|f| f.len);
        if listed != Some(meta.num_vertices.saturating_mul(width)) {
            return Err(Error::corrupt(dir.join(name), "not |V| entries"));
        }
    }
    let ids = store::u64s(&store::read_checked(dir, &meta, "ids.bin")?);
    if ids.len() as u64 != meta.num_vertices || ids.windows(2).any(|w| w[0] >= w[1]) {
        return Err(Error::corrupt(dir.join("ids.bin"), "not |V| strictly increasing ids"));
    }
    let out_deg = store::u32s(&store::read_checked(dir, &meta, "out_degree.bin")?);
    let in_deg = store::u32s(&store::read_checked(dir, &meta, "in_degree.bin")?);
    if out_deg.len() != n || in_deg.len() != n {
        return Err(Error::corrupt(dir, "vertex arrays do not have |V| entries"));
    }
    // Degrees counted from the forward grid's edges (invariants rule 2).
    let mut counts = (vec![0u32; n], vec![0u32; n]);
    let mut indexes = Vec::new();
    let mut bufs = (vec![0u8; CHUNK], vec![0u8; CHUNK]);
    for g in grids {
        let iname = format!("{g}.index");
        // A part's grids hold different numbers of edges: each its listed file length (raw), or
        // what its index says (packed; the invariants check it).
        let listed = meta.files.get(&format!("{g}.edges")).map_or(meta.num_edges, |f| f.len);
        let edges = match meta.encoding {
            store::Encoding::Raw => Some(listed / EDGE_BYTES),
            store::Encoding::Packed => meta.part.is_none().then_some(meta.num_edges),
        };
        let index = GridIndex::decode(
            &dir.join(&iname),
            &store::read_checked(dir, &meta, &iname)?,
            (p, edges),
            meta.weighted,
            meta.encoding,
        )?;
        let mut grid = GridFiles {
            edges: (dir.join(format!("{g}.edges")), None),
            weights: (dir.join(format!("{g}.weights")), None),
        };
        grid.edges.1 = Some(store::open_regular(&grid.edges.0)?);
        if meta.weighted {
            grid.weights.1 = Some(store::open_regular(&grid.weights.0)?);
        }
        for b in 0..(p * p) as usize {
            let count = (*g == "fwd").then_some(&mut counts);
            check_block(&meta, &index, b, &mut grid, &mut bufs, count)?;
            report.blocks += 1;
            report.edges += index.block_edges(b);
        }
        indexes.push(index);
    }
    let refs: Vec<&GridIndex> = indexes.iter().collect();
    invariants::check_open(dir, &meta, &ids, (&out_deg, &in_deg), &refs)?;
    if meta.part.is_none() {
        // A part holds one column stripe's edges: its counts cover only those columns.
        invariants::check_degrees(dir, (&out_deg, &in_deg), (&counts.0, &counts.1))?;
    }
    Ok(report)
}

/// One grid's edge and weight files (path, open descriptor), read in block order.
struct GridFiles {
    edges: (std::path::PathBuf, Option<File>),
    weights: (std::path::PathBuf, Option<File>),
}

/// Checks block `b` piece by piece: its edges' CRC-32, ids inside the partitions and sorted by
/// `(d, s)`, its weights' CRC-32; counts the forward grid's degrees into `count`.
fn check_block(
    meta: &store::Meta,
    index: &GridIndex,
    b: usize,
    files: &mut GridFiles,
    (buf, wbuf): &mut (Vec<u8>, Vec<u8>),
    mut count: Option<&mut (Vec<u32>, Vec<u32>)>,
) -> Result<(), Error> {
    let p = meta.partitions;
    let (sp, dp) = ((b as u64) % p, (b as u64) / p);
    let (slen, dlen) = (meta.partition_len(sp), meta.partition_len(dp));
    let epath = &files.edges.0;
    let Some(f) = files.edges.1.as_mut() else { return Ok(()) };
    let edges = index.block_edges(b);
    let mut left = if index.packed { index.block_bytes(b) } else { edges * EDGE_BYTES } as usize;
    let mut hasher = crc32fast::Hasher::new();
    let mut prev = (0u32, 0u32);
    let mut check = |raw: &[u8]| -> Result<(), Error> {
        for e in raw.chunks_exact(4) {
            let s = u16::from_le_bytes([e[0], e[1]]) as u32;
            let d = u16::from_le_bytes([e[2], e[3]]) as u32;
            if s as u64 >= slen || d as u64 >= dlen || (d, s) < prev {
                return Err(Error::corrupt(
                    epath,
                    format!(
                        "block ({sp}, {dp}) holds an edge outside its partitions or out of order"
                    ),
                ));
            }
            prev = (d, s);
            if let Some((out_count, in_count)) = count.as_mut() {
                let s = (sp * meta.partition_size) as usize + s as usize;
                let d = (dp * meta.partition_size) as usize + d as usize;
                out_count[s] = out_count[s].saturating_add(1);
                in_count[d] = in_count[d].saturating_add(1);
            }
        }
        Ok(())
    };
    // Packed: whole frames per piece (CHUNK is a multiple of a frame), each decoded and checked
    // on its own (its CRC first), so no more than one frame's edges is ever held decoded.
    let (mut raw, mut next) = (Vec::new(), 0u64);
    while left > 0 {
        let piece = &mut buf[..left.min(CHUNK)];
        f.read_exact(piece).map_err(|e| Error::io(epath, "read failed", e))?;
        hasher.update(piece);
        left -= piece.len();
        if !index.packed {
            check(piece)?;
            continue;
        }
        for frame in piece.chunks(store::packed::FRAME_BYTES) {
            raw.clear();
            let (first, n) = store::packed::decode_frame(frame, &mut raw)
                .map_err(|e| Error::corrupt(epath, format!("block ({sp}, {dp}): {e}")))?;
            if first != next {
                return Err(Error::corrupt(
                    epath,
                    format!("block ({sp}, {dp}): frames out of order"),
                ));
            }
            next += n;
            check(&raw)?;
        }
    }
    if index.packed && next != edges {
        return Err(Error::corrupt(
            epath,
            format!("block ({sp}, {dp}): the frames do not hold the block's {edges} edges"),
        ));
    }
    if hasher.finalize() != index.crcs[b] {
        return Err(Error::corrupt(epath, format!("block ({sp}, {dp}) fails its checksum")));
    }
    let wpath = &files.weights.0;
    if let Some(wf) = files.weights.1.as_mut() {
        let mut left = (index.block_edges(b) * WEIGHT_BYTES) as usize;
        let mut hasher = crc32fast::Hasher::new();
        while left > 0 {
            let piece = &mut wbuf[..left.min(CHUNK)];
            wf.read_exact(piece).map_err(|e| Error::io(wpath, "read failed", e))?;
            hasher.update(piece);
            left -= piece.len();
        }
        weights::verify_sum(wpath, index, p as usize, b, hasher.finalize())?;
    }
    Ok(())
}
