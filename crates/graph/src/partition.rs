//! Partitioned stores: a grid store split so that each of `R` ranks owns a range of destination
//! partitions (column stripes) and every block into them (`notes/issue12.md`, item 3).
//!
//! # Layout
//! A directory holding `parts.json` and one directory per rank, `part-0000`, `part-0001`, …
//! Each part is itself a valid grid store ([`crate::store`]): the same `meta.json` fields, the
//! whole id map and degree arrays (PageRank needs every out-degree), and the grids' indexes
//! over all P² blocks, but only the blocks of the columns the rank owns hold edges (the others
//! are empty). Columns are contiguous in the store (column-major blocks, store rule 2), so a
//! part's `fwd.edges` (and `rev.edges`, `*.weights`) is one byte range of the whole store's.
//!
//! # Contract
//! 1. Rank `r` owns partitions `ranges[r] = lo..hi`: the vertices `lo·size .. min(hi·size, n)`.
//!    Ranges are contiguous, in rank order, and cover `0..P`; a range may be empty (more ranks
//!    than partitions, or a heavy column). Cuts balance the stored edges (forward plus reverse).
//! 2. Every file of each part is checksummed by the part's `meta.json` (store rule 3); the
//!    part's `meta.json` itself by `parts.json`, which checksums itself like `meta.json`.
//!    [`open_part`] checks both before the part is opened.
//! 3. A part's `num_edges` is the larger of its two grids' edge counts; each grid's own count
//!    is its listed file length (the engine reads it so).
//! 4. The output appears at its target only when complete (temporary directory + rename).
//! 5. Memory: the grid indexes (their bytes and decoded) and one 4 MiB copy buffer, reserved
//!    from the caller's budget first; the vertex files are copied in pieces, their checksums
//!    checked as they stream.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use sluice_io::Budget;

use crate::Error;
use crate::cleanup::TempDir;
use crate::store::{self, FileSum, GridIndex, Meta, SumWriter};

/// The `format` field of `parts.json`.
pub const PARTS_FORMAT: &str = "sluice-grid-parts";
/// Name of the file that describes a partitioned store.
pub const PARTS_FILE: &str = "parts.json";

/// Contents of `parts.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Parts {
    /// Always [`PARTS_FORMAT`].
    pub format: String,
    /// R: ranks (parts).
    pub ranks: u32,
    /// |V| of the whole graph.
    pub num_vertices: u64,
    /// Forward edges of the whole graph.
    pub num_edges: u64,
    /// P of the grid.
    pub partitions: u64,
    /// Vertices per partition.
    pub partition_size: u64,
    /// Partitions owned by each rank (rule 1), as `[lo, hi)`.
    pub ranges: Vec<[u64; 2]>,
    /// Length and CRC-32 of each part's `meta.json`.
    pub part_meta: Vec<FileSum>,
    /// CRC-32 of `parts.json` with this field zeroed (as `meta_crc32` of a store).
    pub parts_crc32: String,
}

impl Parts {
    /// The dense vertex ids rank `r` owns.
    pub fn vertices(&self, r: usize) -> Range<u32> {
        let [lo, hi] = self.ranges[r];
        let end = |p: u64| (p * self.partition_size).min(self.num_vertices) as u32;
        end(lo)..end(hi)
    }
}

/// Name of rank `r`'s part directory.
pub fn part_name(r: usize) -> String {
    format!("part-{r:04}")
}

/// Returns true if and only if `dir` holds a partitioned store.
pub fn is_partitioned(dir: &Path) -> bool {
    dir.join(PARTS_FILE).is_file()
}

/// Cuts `0..P` into `ranks` contiguous ranges of about equal edge counts (`col_edges[c]`: edges
/// into column `c`): range `r` ends at the first column where the running total reaches
/// `(r + 1) / ranks` of all edges.
fn cut(col_edges: &[u64], ranks: u32) -> Vec<[u64; 2]> {
    let total: u64 = col_edges.iter().sum();
    let p = col_edges.len() as u64;
    let mut ranges = Vec::with_capacity(ranks as usize);
    let (mut lo, mut c, mut acc) = (0u64, 0u64, 0u128);
    for r in 0..ranks as u128 {
        let target = (r + 1) * total as u128;
        while c < p && acc * (ranks as u128) < target {
            acc += col_edges[c as usize] as u128;
            c += 1;
        }
        if r + 1 == ranks as u128 {
            c = p;
        }
        ranges.push([lo, c]);
        lo = c;
    }
    ranges
}

/// Splits the grid store `store_dir` into `ranks` parts under `out` (see the module docs).
/// `out` must not exist unless `force`; it is replaced only when it is a partitioned store.
pub fn partition(
    store_dir: &Path,
    ranks: u32,
    out: &Path,
    force: bool,
    budget: &Budget,
) -> Result<Parts, Error> {
    if ranks == 0 {
        return Err(Error::Config("a partitioned store needs at least one rank".into()));
    }
    if out.exists() && !(force && is_partitioned(out)) {
        return Err(Error::TargetExists { path: out.to_path_buf() });
    }
    let meta = store::read_meta(store_dir)?;
    let p = meta.partitions as usize;
    let names: &[&str] = if meta.directed { &["fwd", "rev"] } else { &["fwd"] };
    // What it holds (rule 5): each index twice (its bytes and decoded), the copy buffer.
    let index_bytes: u64 = names
        .iter()
        .map(|n| meta.files.get(&format!("{n}.index")).map_or(0, |f| f.len))
        .sum::<u64>()
        .saturating_mul(2);
    let _held =
        budget.reserve("the grid indexes and a copy buffer", index_bytes + COPY_BUF as u64)?;
    let mut indexes = Vec::new();
    for name in names {
        let iname = format!("{name}.index");
        let bytes = store::read_checked(store_dir, &meta, &iname)?;
        indexes.push(GridIndex::decode(
            &store_dir.join(&iname),
            &bytes,
            (meta.partitions, Some(meta.num_edges)),
            meta.weighted,
            meta.encoding,
        )?);
    }
    let col_edges: Vec<u64> = (0..p)
        .map(|c| indexes.iter().map(|ix| ix.offsets[(c + 1) * p] - ix.offsets[c * p]).sum())
        .collect();
    let ranges = cut(&col_edges, ranks);

    let parent = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = out.file_name().map_or("parts".into(), |n| n.to_string_lossy().into_owned());
    let stage = TempDir::new(parent.join(format!(".{name}.tmp-{}", std::process::id())))?;
    let mut part_meta = Vec::new();
    for (r, &[lo, hi]) in ranges.iter().enumerate() {
        let dir = stage.path().join(part_name(r));
        std::fs::create_dir(&dir).map_err(|e| Error::io(&dir, "cannot create", e))?;
        let mut m = meta.clone();
        for f in ["ids.bin", "out_degree.bin", "in_degree.bin"] {
            copy_checked(store_dir, &meta, f, &dir)?;
        }
        let mut most = 0;
        for (name, ix) in names.iter().zip(&indexes) {
            let (b0, b1) = (lo as usize * p, hi as usize * p);
            let (e0, e1) = (ix.offsets[b0], ix.offsets[b1]);
            let (y0, y1) = (ix.bytes[b0], ix.bytes[b1]);
            let part = GridIndex {
                offsets: ix.offsets.iter().map(|&o| o.clamp(e0, e1) - e0).collect(),
                bytes: ix.bytes.iter().map(|&o| o.clamp(y0, y1) - y0).collect(),
                packed: ix.packed,
                crcs: (0..p * p)
                    .map(|b| if (b0..b1).contains(&b) { ix.crcs[b] } else { crc32fast::hash(&[]) })
                    .collect(),
                weight_crcs: (0..ix.weight_crcs.len())
                    .map(|b| {
                        if (b0..b1).contains(&b) { ix.weight_crcs[b] } else { crc32fast::hash(&[]) }
                    })
                    .collect(),
            };
            let iname = format!("{name}.index");
            m.files.insert(iname.clone(), store::write_file(&dir.join(&iname), &part.to_bytes())?);
            let ename = format!("{name}.edges");
            let sum = copy_range(&store_dir.join(&ename), y0, y1, &dir)?;
            m.files.insert(ename, sum);
            if meta.weighted {
                let wname = format!("{name}.weights");
                let sum = copy_range(&store_dir.join(&wname), e0 * 8, e1 * 8, &dir)?;
                m.files.insert(wname, sum);
            }
            most = most.max(e1 - e0);
        }
        m.num_edges = most;
        m.part = Some(store::PartOf { columns: [lo, hi], graph_edges: meta.num_edges });
        store::write_meta(&dir, &mut m)?;
        part_meta.push(store::file_sum(&dir.join("meta.json"))?);
    }
    let mut parts = Parts {
        format: PARTS_FORMAT.into(),
        ranks,
        num_vertices: meta.num_vertices,
        num_edges: meta.num_edges,
        partitions: meta.partitions,
        partition_size: meta.partition_size,
        ranges,
        part_meta,
        parts_crc32: "00000000".into(),
    };
    write_parts(stage.path(), &mut parts)?;
    if out.exists() {
        std::fs::remove_dir_all(out).map_err(|e| Error::io(out, "cannot replace", e))?;
    }
    std::fs::rename(stage.path(), out)
        .map_err(|e| Error::io(out, "cannot move the partitioned store into place", e))?;
    stage.keep();
    Ok(parts)
}

/// Bytes copied at a time.
const COPY_BUF: usize = 4 << 20;

/// Copies store file `name` into `dir` in pieces, checking its length and checksum against
/// `meta` on the way; a mismatch is an error (the staging directory is then removed whole).
fn copy_checked(store_dir: &Path, meta: &Meta, name: &str, dir: &Path) -> Result<(), Error> {
    let src = store_dir.join(name);
    let sum =
        meta.files.get(name).ok_or_else(|| Error::corrupt(&src, "not listed in meta.json"))?;
    let len = std::fs::metadata(&src).map_err(|e| Error::io(&src, "cannot open", e))?.len();
    if len != sum.len {
        return Err(Error::corrupt(&src, format!("{len} bytes, meta.json says {}", sum.len)));
    }
    let copied = copy_range(&src, 0, len, dir)?;
    if copied.crc32 != sum.crc32 {
        return Err(Error::corrupt(
            &src,
            format!("checksum mismatch (stored {:08x}, computed {:08x})", sum.crc32, copied.crc32),
        ));
    }
    Ok(())
}

/// Copies bytes `lo..hi` of `src` into a file of the same name in `dir`; returns its sum.
fn copy_range(src: &Path, lo: u64, hi: u64, dir: &Path) -> Result<FileSum, Error> {
    let mut f = File::open(src).map_err(|e| Error::io(src, "cannot open", e))?;
    f.seek(SeekFrom::Start(lo)).map_err(|e| Error::io(src, "seek failed", e))?;
    let name = src.file_name().unwrap_or_default();
    let mut w = SumWriter::create(&dir.join(name))?;
    let mut left = hi - lo;
    let mut buf = vec![0u8; COPY_BUF];
    while left > 0 {
        let k = (buf.len() as u64).min(left) as usize;
        f.read_exact(&mut buf[..k])
            .map_err(|e| Error::io(src, &format!("read at offset {} failed", hi - left), e))?;
        w.write(&buf[..k])?;
        left -= k as u64;
    }
    w.finish()
}

/// Writes `parts.json` with its own checksum (rule 2).
fn write_parts(dir: &Path, parts: &mut Parts) -> Result<(), Error> {
    parts.parts_crc32 = "00000000".into();
    let text = serde_json::to_string_pretty(parts).map_err(|e| Error::Config(e.to_string()))?;
    let crc = crc32fast::hash(text.as_bytes());
    let text = text.replacen(
        "\"parts_crc32\": \"00000000\"",
        &format!("\"parts_crc32\": \"{crc:08x}\""),
        1,
    );
    store::write_file(&dir.join(PARTS_FILE), text.as_bytes())?;
    parts.parts_crc32 = format!("{crc:08x}");
    Ok(())
}

/// Reads and checks `dir/parts.json` (its own checksum, its shape).
pub fn read_parts(dir: &Path) -> Result<Parts, Error> {
    let path = dir.join(PARTS_FILE);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::io(&path, "cannot read the parts description", e))?;
    let parts: Parts = serde_json::from_str(&text)
        .map_err(|e| Error::corrupt(&path, format!("not a parts description ({e})")))?;
    let zeroed = text.replacen(
        &format!("\"parts_crc32\": \"{}\"", parts.parts_crc32),
        "\"parts_crc32\": \"00000000\"",
        1,
    );
    let crc = crc32fast::hash(zeroed.as_bytes());
    if parts.format != PARTS_FORMAT || format!("{crc:08x}") != parts.parts_crc32 {
        return Err(Error::corrupt(&path, format!("checksum mismatch (computed {crc:08x})")));
    }
    let r = parts.ranks as usize;
    let contiguous = parts.ranges.windows(2).all(|w| w[0][1] == w[1][0])
        && parts.ranges.iter().all(|x| x[0] <= x[1]);
    if parts.ranges.len() != r
        || parts.part_meta.len() != r
        || !contiguous
        || parts.ranges.first().map(|x| x[0]) != Some(0)
        || parts.ranges.last().map(|x| x[1]) != Some(parts.partitions)
    {
        return Err(Error::corrupt(&path, "ranges do not cover the partitions in rank order"));
    }
    Ok(parts)
}

/// Checks `parts.json` and rank `rank`'s `meta.json` against it (rule 2); returns the parts
/// and the part's directory, ready for [`crate::Graph::open`] (which checks the part's files).
pub fn open_part(dir: &Path, rank: usize, ranks: usize) -> Result<(Parts, PathBuf), Error> {
    let parts = read_parts(dir)?;
    if parts.ranks as usize != ranks {
        return Err(Error::Config(format!(
            "{}: the store has {} parts, the job {ranks} ranks; rewrite it with `partition`",
            dir.display(),
            parts.ranks
        )));
    }
    let part = dir.join(part_name(rank));
    let meta_path = part.join("meta.json");
    let sum = store::file_sum(&meta_path)?;
    if sum != parts.part_meta[rank] {
        return Err(Error::corrupt(&meta_path, "does not match the checksum in parts.json"));
    }
    Ok((parts, part))
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn cuts_cover_every_column_in_order_and_balance_edges() {
        let cols = [5u64, 1, 1, 1, 1, 1, 5, 0];
        for ranks in 1..=10 {
            let r = cut(&cols, ranks);
            assert_eq!(r.len(), ranks as usize);
            assert_eq!(r[0][0], 0);
            assert_eq!(r.last().unwrap()[1], cols.len() as u64);
            assert!(r.windows(2).all(|w| w[0][1] == w[1][0] && w[0][0] <= w[0][1]));
            // No range exceeds its share by more than its last column.
            let total: u64 = cols.iter().sum();
            for x in &r {
                let e: u64 = cols[x[0] as usize..x[1] as usize].iter().sum();
                let last = if x[1] > x[0] { cols[x[1] as usize - 1] } else { 0 };
                assert!(e <= total.div_ceil(ranks as u64) + last, "{ranks}: {r:?}");
            }
        }
    }
}
