//! The grid store: the on-disk form of a graph (`DESIGN.md`, "Grid store").
//!
//! # Layout (format version 1)
//! A directory holding:
//!
//! | file | contents |
//! |---|---|
//! | `meta.json` | format name and version, \|V\|, \|E\|, P, partition size, flags, the length and CRC-32 of every other file, and its own CRC-32 (`meta_crc32`, see rule 3) |
//! | `ids.bin` | original id of each dense id, `u64` LE; strictly increasing (dense order = original order) |
//! | `out_degree.bin`, `in_degree.bin` | `u32` LE per vertex, counted over the stored edges |
//! | `fwd.index` | `(P²+1)` `u64` LE edge offsets, then (packed stores) `(P²+1)` `u64` LE byte offsets, then `P²` `u32` LE block CRC-32s, then (weighted graphs) `P²` `u32` LE CRC-32s of the blocks' weights ([`weights`]) |
//! | `fwd.edges` | every stored edge s→d, raw: 4 bytes, `s − start(sp)` then `d − start(dp)`, each `u16` LE; packed: each block as whole frames ([`packed`]) |
//! | `fwd.weights` | weighted graphs only: one `f64` LE per edge, in the order of `fwd.edges` |
//! | `rev.index`, `rev.edges`, `rev.weights` | directed graphs only: the same for the transposed graph (every edge d→s) |
//!
//! # Contract
//! 1. Vertices are cut into `P` partitions of `partition_size` consecutive dense ids
//!    (`partition_size` ≤ 65536 and a multiple of 64), so partition-relative ids fit a `u16`:
//!    a pass reads 4 bytes per edge.
//! 2. Block `(sp, dp)` holds the edges from partition `sp` to partition `dp`; blocks are stored
//!    column-major (`b = dp·P + sp`), so all the blocks into one destination partition (a
//!    column) are one sequential range; a row is P ranges listed by the index. Inside a block,
//!    edges are sorted by `(d, s)`.
//! 3. Every file has its CRC-32 in `meta.json`; `meta.json` carries its own CRC-32, computed
//!    over the file's bytes with the eight hex digits of `meta_crc32` replaced by `0`s. Every
//!    block also has its own CRC-32 in the index, checked whenever the block is read, and so
//!    do its weights ([`weights`]).
//! 4. Undirected graphs store both directions of every edge (a self loop once); directed
//!    graphs store the transposed grid too (`rev.*`) so passes can follow in-edges and
//!    out-edges. Duplicate edges and self loops are kept unless the import used `--simple`.
//! 5. A store is written in a temporary directory beside its target and renamed into place,
//!    so a reader never sees half a store.
//! 6. `meta.json`'s `encoding` says how blocks are stored: absent for `raw` (4 bytes per edge,
//!    as every store before the field) or `packed` ([`packed`]: whole frames of
//!    [`packed::FRAME_BYTES`] per block, the index listing each block's byte range). A block's
//!    CRC-32 covers its stored (packed) bytes, so corruption is found before decoding; the
//!    decoded edges are the raw encoding's, in the same order, so every reader downstream of
//!    the decoder is the same for both.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::Error;

mod dir;
pub mod invariants;
pub mod packed;
pub mod weights;

pub use dir::StoreDir;

/// The format version this build reads and writes.
pub const FORMAT_VERSION: u64 = 1;
/// The `format` field of `meta.json`.
pub const FORMAT_NAME: &str = "sluice-grid";
/// Bytes per stored edge (two `u16` partition-relative ids).
pub const EDGE_BYTES: u64 = 4;
/// Largest partition: relative ids must fit a `u16`.
pub const MAX_PARTITION_SIZE: u64 = 1 << 16;
/// Largest P of format version 1 (the index has P² entries).
pub const MAX_PARTITIONS: u64 = 4096;

/// Length and CRC-32 of one store file.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileSum {
    /// Bytes.
    pub len: u64,
    /// CRC-32 (IEEE) of the whole file.
    pub crc32: u32,
}

/// What a part of a partitioned store holds of the whole graph.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct PartOf {
    /// The destination partitions (grid columns) `[lo, hi)` whose blocks the part holds, in
    /// each grid; every other block is empty.
    pub columns: [u64; 2],
    /// |E| of the whole graph (the forward grid's edges), which the degrees add up to.
    pub graph_edges: u64,
}

/// How a store's `*.edges` files encode the edges of a block (contract rule 6).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// 4 bytes per edge: two `u16` partition-relative ids.
    #[default]
    Raw,
    /// Frames of bit-packed gaps and sources ([`packed`]): about 2.8 bytes per edge on a
    /// Kronecker graph of scale 24 (version 2 frames; version 1's Rice codes took 2.4).
    Packed,
}

impl Encoding {
    /// Whether this is [`Encoding::Raw`] (not written to `meta.json`).
    pub fn is_raw(&self) -> bool {
        *self == Encoding::Raw
    }

    /// The name `meta.json` and `graph info` use.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Raw => "raw",
            Encoding::Packed => "packed",
        }
    }
}

impl std::str::FromStr for Encoding {
    type Err = String;
    fn from_str(s: &str) -> Result<Encoding, String> {
        match s {
            "raw" => Ok(Encoding::Raw),
            "packed" => Ok(Encoding::Packed),
            _ => Err(format!("unknown edge encoding {s:?} (raw or packed)")),
        }
    }
}

/// Contents of `meta.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    /// Always [`FORMAT_NAME`].
    pub format: String,
    /// [`FORMAT_VERSION`] when written by this build.
    pub format_version: u64,
    /// |V|, isolated vertices included.
    pub num_vertices: u64,
    /// Edges stored in the forward grid (both directions of an undirected edge count).
    pub num_edges: u64,
    /// Edges read from the input (one per line or record), before `--simple`.
    pub input_edges: u64,
    /// Whether edges are directed.
    pub directed: bool,
    /// Whether `*.weights` files exist.
    pub weighted: bool,
    /// Whether self loops and duplicate edges were removed at import.
    pub simple: bool,
    /// Self loops among the stored edges.
    pub self_loops: u64,
    /// P: partitions per side of the grid.
    pub partitions: u64,
    /// Vertices per partition (the last one may be short).
    pub partition_size: u64,
    /// The input format the store was imported from.
    pub source_format: String,
    /// How `*.edges` encode the edges (contract rule 6); absent means `raw` (written only for
    /// packed stores, so a raw store's `meta.json` is the same bytes as before the field).
    #[serde(default, skip_serializing_if = "Encoding::is_raw")]
    pub encoding: Encoding,
    /// Every other file: name → length and CRC-32.
    pub files: BTreeMap<String, FileSum>,
    /// Set in one rank's part of a partitioned store ([`crate::partition`]): the part holds the
    /// whole graph's vertex arrays but only the blocks of its column stripe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<PartOf>,
    /// CRC-32 of this file (contract rule 3), 8 lowercase hex digits.
    pub meta_crc32: String,
}

impl Meta {
    /// Partition of dense vertex `v`.
    pub fn partition_of(&self, v: u64) -> u64 {
        v / self.partition_size
    }
    /// First dense id of partition `p`.
    pub fn partition_start(&self, p: u64) -> u64 {
        p * self.partition_size
    }
    /// Vertices in partition `p`.
    pub fn partition_len(&self, p: u64) -> u64 {
        self.partition_size.min(self.num_vertices.saturating_sub(p * self.partition_size))
    }
}

/// Chooses P and the partition size for `n` vertices (contract rule 1).
pub fn layout_for(n: u64) -> Result<(u64, u64), Error> {
    if n <= MAX_PARTITION_SIZE {
        let size = n.div_ceil(64).max(1) * 64;
        return Ok((1, size));
    }
    let p = n.div_ceil(MAX_PARTITION_SIZE);
    if p > MAX_PARTITIONS {
        return Err(Error::TooLarge(format!(
            "{n} vertices: store format {FORMAT_VERSION} holds at most {} vertices",
            MAX_PARTITIONS * MAX_PARTITION_SIZE
        )));
    }
    Ok((p, MAX_PARTITION_SIZE))
}

/// A file being written with its length and CRC-32 tracked.
#[derive(Debug)]
pub(crate) struct SumWriter {
    w: BufWriter<File>,
    hasher: crc32fast::Hasher,
    len: u64,
    path: PathBuf,
    /// Bytes whose write-back has been started (`sluice_io::start_writeback`).
    kicked: u64,
}

/// A [`SumWriter`] starts the write-back of what it wrote every this many bytes, so that its
/// final `fsync` waits for the tail only: at Kronecker scale 24 the import's two 1 GiB grid
/// files waited 1.5 and 2.1 s in `fsync`, on the import's critical path.
const WRITEBACK_BYTES: u64 = 32 << 20;

impl SumWriter {
    pub(crate) fn create(path: &Path) -> Result<SumWriter, Error> {
        let f = File::create(path).map_err(|e| Error::io(path, "cannot create", e))?;
        Ok(SumWriter {
            w: BufWriter::with_capacity(1 << 20, f),
            hasher: crc32fast::Hasher::new(),
            len: 0,
            path: path.to_path_buf(),
            kicked: 0,
        })
    }
    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.hasher.update(bytes);
        self.len += bytes.len() as u64;
        self.w.write_all(bytes).map_err(|e| Error::io(&self.path, "write failed", e))?;
        // What the buffer passed to the file so far.
        let written = self.len - self.w.buffer().len() as u64;
        if written - self.kicked >= WRITEBACK_BYTES {
            sluice_io::start_writeback(self.w.get_ref(), self.kicked, written - self.kicked);
            self.kicked = written;
        }
        Ok(())
    }
    pub(crate) fn finish(mut self) -> Result<FileSum, Error> {
        self.w.flush().map_err(|e| Error::io(&self.path, "write failed", e))?;
        let f = self
            .w
            .into_inner()
            .map_err(|e| Error::io(&self.path, "write failed", e.into_error()))?;
        f.sync_all().map_err(|e| Error::io(&self.path, "fsync failed", e))?;
        Ok(FileSum { len: self.len, crc32: self.hasher.finalize() })
    }
}

/// Writes a whole small file and returns its sum.
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<FileSum, Error> {
    let mut w = SumWriter::create(path)?;
    w.write(bytes)?;
    w.finish()
}

/// Serializes `meta` with its own checksum (contract rule 3) into `dir/meta.json`.
pub(crate) fn write_meta(dir: &Path, meta: &mut Meta) -> Result<(), Error> {
    meta.meta_crc32 = "00000000".into();
    let mut text = serde_json::to_vec_pretty(meta).map_err(|e| Error::Config(e.to_string()))?;
    text.push(b'\n');
    let crc = crc32fast::hash(&text);
    meta.meta_crc32 = format!("{crc:08x}");
    let text = String::from_utf8(text).map_err(|e| Error::Config(e.to_string()))?.replacen(
        "\"meta_crc32\": \"00000000\"",
        &format!("\"meta_crc32\": \"{crc:08x}\""),
        1,
    );
    write_file(&dir.join("meta.json"), text.as_bytes())?;
    Ok(())
}

/// Reads and checks `dir/meta.json`: the format name and version first (so another version is
/// reported as such), then its own checksum.
pub fn read_meta(dir: &Path) -> Result<Meta, Error> {
    StoreDir::open(dir)?.read_meta()
}

/// Checks the bytes of `meta.json` read from `path` (see [`read_meta`]).
pub(crate) fn parse_meta(path: &Path, bytes: Vec<u8>) -> Result<Meta, Error> {
    let path = path.to_path_buf();
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| Error::corrupt(&path, format!("not valid JSON ({e})")))?;
    if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT_NAME) {
        return Err(Error::corrupt(&path, "not a sluice grid store (format field)"));
    }
    let version = value
        .get("format_version")
        .and_then(|v| v.as_u64())
        .ok_or_else(|| Error::corrupt(&path, "format_version missing"))?;
    if version != FORMAT_VERSION {
        return Err(Error::Version { path, found: version, expected: FORMAT_VERSION });
    }
    let key = b"\"meta_crc32\": \"";
    let pos = memchr::memmem::find_iter(&bytes, key).collect::<Vec<_>>();
    let [pos] = pos[..] else {
        return Err(Error::corrupt(&path, "meta_crc32 missing or repeated"));
    };
    let start = pos + key.len();
    let hex = bytes.get(start..start + 8).ok_or_else(|| Error::corrupt(&path, "truncated"))?;
    let stored = std::str::from_utf8(hex)
        .ok()
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .ok_or_else(|| Error::corrupt(&path, "meta_crc32 is not hex"))?;
    let mut zeroed = bytes.clone();
    zeroed[start..start + 8].copy_from_slice(b"00000000");
    let actual = crc32fast::hash(&zeroed);
    if actual != stored || bytes.get(start + 8) != Some(&b'"') {
        return Err(Error::corrupt(
            &path,
            format!("checksum mismatch (stored {stored:08x}, computed {actual:08x})"),
        ));
    }
    let meta: Meta =
        serde_json::from_value(value).map_err(|e| Error::corrupt(&path, e.to_string()))?;
    check_meta(&path, &meta)?;
    Ok(meta)
}

fn check_meta(path: &Path, m: &Meta) -> Result<(), Error> {
    let bad = |msg: &str| Err(Error::corrupt(path, msg.to_string()));
    if m.num_vertices == 0 {
        return bad("no vertices");
    }
    match layout_for(m.num_vertices) {
        Ok((p, size)) if p == m.partitions && size == m.partition_size => {}
        _ => return bad("partitions do not match the vertex count"),
    }
    let mut need = vec!["ids.bin", "out_degree.bin", "in_degree.bin", "fwd.index", "fwd.edges"];
    if m.weighted {
        need.push("fwd.weights");
    }
    if m.directed {
        need.extend(["rev.index", "rev.edges"]);
        if m.weighted {
            need.push("rev.weights");
        }
    }
    for name in need {
        if !m.files.contains_key(name) {
            return bad(&format!("file {name} not listed"));
        }
    }
    Ok(())
}

/// Reads a whole store file and checks it against its listed length and CRC-32.
pub(crate) fn read_checked(dir: &Path, meta: &Meta, name: &str) -> Result<Vec<u8>, Error> {
    StoreDir::open(dir)?.read_checked(meta, name)
}

/// Opens a store file for reading; anything but a regular file (a FIFO, a device, a
/// directory) is an error, found without blocking: the file is opened `O_NONBLOCK` (opening a
/// FIFO for reading would wait for a writer; issue 17, "`graph verify` hangs on a FIFO") and
/// its type checked on the open descriptor.
pub(crate) fn open_regular(path: &Path) -> Result<File, Error> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(|e| Error::io(path, "cannot open", e))?;
    check_regular(&f, path)?;
    Ok(f)
}

/// Errors unless `f` (opened `O_NONBLOCK`) is a regular file; then clears `O_NONBLOCK` (reads
/// of a regular file ignore it; cleared all the same so the descriptor is what `File::open`
/// would give).
fn check_regular(f: &File, path: &Path) -> Result<(), Error> {
    let md = f.metadata().map_err(|e| Error::io(path, "cannot open", e))?;
    if !md.is_file() {
        return Err(Error::corrupt(path, "not a regular file"));
    }
    rustix::fs::fcntl_setfl(f, rustix::fs::OFlags::empty())
        .map_err(|e| Error::io(path, "cannot open", std::io::Error::from(e)))
}

/// CRC-32 and length of a whole file, read in 4 MiB pieces.
pub(crate) fn file_sum(path: &Path) -> Result<FileSum, Error> {
    let mut f = open_regular(path)?;
    let mut h = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 4 << 20];
    let mut len = 0u64;
    loop {
        let k = f.read(&mut buf).map_err(|e| Error::io(path, "read failed", e))?;
        if k == 0 {
            break;
        }
        h.update(&buf[..k]);
        len += k as u64;
    }
    Ok(FileSum { len, crc32: h.finalize() })
}

/// The index of one grid: edge offsets and block checksums.
#[derive(Debug, Clone)]
pub struct GridIndex {
    /// `P²+1` edge offsets, column-major blocks.
    pub offsets: Vec<u64>,
    /// `P²+1` byte offsets of the blocks in `*.edges` (raw: 4 × `offsets`).
    pub bytes: Vec<u64>,
    /// Whether the blocks are packed (`bytes` is stored in the index file).
    pub packed: bool,
    /// `P²` block CRC-32s (of the block's bytes in `*.edges`).
    pub crcs: Vec<u32>,
    /// `P²` block CRC-32s of the block's bytes in `*.weights` (weighted grids; empty
    /// otherwise), see [`weights`].
    pub weight_crcs: Vec<u32>,
}

impl GridIndex {
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.offsets.len() * 8 + self.crcs.len() * 4);
        let bytes = if self.packed { &self.bytes[..] } else { &[] };
        for o in self.offsets.iter().chain(bytes) {
            out.extend_from_slice(&o.to_le_bytes());
        }
        for c in self.crcs.iter().chain(&self.weight_crcs) {
            out.extend_from_slice(&c.to_le_bytes());
        }
        out
    }

    pub(crate) fn from_bytes(
        path: &Path,
        bytes: &[u8],
        p: u64,
        edges: u64,
        weighted: bool,
    ) -> Result<GridIndex, Error> {
        GridIndex::decode(path, bytes, (p, Some(edges)), weighted, Encoding::Raw)
    }

    /// Reads an index of either encoding; `edges` (when given) is where the edge offsets must
    /// end (a packed part of a partitioned store lists no count of its own: its invariants
    /// check its columns instead).
    pub(crate) fn decode(
        path: &Path,
        bytes: &[u8],
        (p, edges): (u64, Option<u64>),
        weighted: bool,
        encoding: Encoding,
    ) -> Result<GridIndex, Error> {
        let blocks = (p * p) as usize;
        let sums = if weighted { 2 } else { 1 };
        let packed = encoding == Encoding::Packed;
        let heads = (blocks + 1) * 8 * if packed { 2 } else { 1 };
        if bytes.len() != heads + blocks * 4 * sums {
            let why = match weighted && bytes.len() == heads + blocks * 4 {
                true => {
                    "index has no weight checksums (written before weights were checksummed: re-import the graph)"
                }
                false => "index has the wrong length",
            };
            return Err(Error::corrupt(path, why));
        }
        let (o, c) = bytes.split_at(heads);
        let o = u64s(o);
        let (offsets, byte_offsets) = match packed {
            true => (o[..blocks + 1].to_vec(), o[blocks + 1..].to_vec()),
            false => (o.clone(), o.iter().map(|&x| x.saturating_mul(EDGE_BYTES)).collect()),
        };
        let (c, w) = c.split_at(blocks * 4);
        let (crcs, weight_crcs) = (u32s(c), u32s(w));
        if offsets[0] != 0
            || edges.is_some_and(|e| offsets[blocks] != e)
            || offsets.windows(2).any(|w| w[0] > w[1])
        {
            return Err(Error::corrupt(
                path,
                "index offsets are not monotone or do not end at |E|",
            ));
        }
        if packed {
            let frame = packed::FRAME_BYTES as u64;
            let per_frame = frame * 8;
            let bad = byte_offsets[0] != 0
                || (0..blocks).any(|b| {
                    let (e, n) = (offsets[b + 1] - offsets[b], byte_offsets[b + 1]);
                    let frames = n.checked_sub(byte_offsets[b]).map(|x| (x / frame, x % frame));
                    frames.is_none_or(|(f, rest)| rest != 0 || f > e || e > f * per_frame)
                });
            if bad {
                return Err(Error::corrupt(
                    path,
                    "index byte offsets do not hold whole frames of their blocks' edges",
                ));
            }
        }
        Ok(GridIndex { offsets, bytes: byte_offsets, packed, crcs, weight_crcs })
    }

    /// Stored bytes of block `b`.
    pub fn block_bytes(&self, b: usize) -> u64 {
        self.bytes[b + 1] - self.bytes[b]
    }

    /// Edges in block `b`.
    pub fn block_edges(&self, b: usize) -> u64 {
        self.offsets[b + 1] - self.offsets[b]
    }
}

/// Bytes free on the file system holding `dir`.
pub fn free_space(dir: &Path) -> Result<u64, Error> {
    let st = rustix::fs::statvfs(dir)
        .map_err(|e| Error::io(dir, "cannot query free space", std::io::Error::from(e)))?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

/// Decodes little-endian `u64`s.
pub(crate) fn u64s(bytes: &[u8]) -> Vec<u64> {
    bytes.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]))).collect()
}

/// Decodes little-endian `u32`s.
pub(crate) fn u32s(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|b| u32::from_le_bytes(b.try_into().unwrap_or([0; 4]))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file written in pieces of odd sizes past several write-back kicks reads back whole,
    /// with the length and CRC-32 of its bytes.
    #[test]
    fn sum_writer_keeps_every_byte_across_writeback_kicks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.edges");
        let total = 3 * WRITEBACK_BYTES as usize + 12_345;
        let bytes: Vec<u8> = (0..total).map(|i| ((i as u64 * 2654435761) >> 13) as u8).collect();
        let mut w = SumWriter::create(&path).unwrap();
        let mut at = 0;
        for step in [1, 4093, 1 << 20, 5 << 20, 3 << 22].into_iter().cycle() {
            if at == total {
                break;
            }
            let end = (at + step).min(total);
            w.write(&bytes[at..end]).unwrap();
            at = end;
        }
        assert!(w.kicked >= 2 * WRITEBACK_BYTES, "write-back started {} bytes", w.kicked);
        let sum = w.finish().unwrap();
        assert_eq!(sum.len, total as u64);
        assert_eq!(sum.crc32, crc32fast::hash(&bytes));
        assert!(std::fs::read(&path).unwrap() == bytes, "the file's bytes");
    }
}
