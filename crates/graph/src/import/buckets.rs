//! Pass 2: every edge, mapped to dense ids, appended to the scratch bucket file of its
//! destination column group (a group is `cols_per_group` partitions). Records are
//! `u32 s, u32 d[, f64 weight]`. An undirected edge `(a, b)` is bucketed as `(a, b)` and, unless
//! a self loop, `(b, a)`; a directed one only as `(a, b)`: pass 3 builds the reverse grid from
//! the forward one (`blocks::write_reverse`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use sluice_io::Pipeline;

use super::Progress;
use super::describe::Source;
use super::parse::RawEdges;
use super::read::for_each_chunk;
use super::vertices::Lookup;
use crate::Error;

/// One bucket file, written and flushed.
#[derive(Debug)]
pub(super) struct Bucket {
    pub(super) path: PathBuf,
    /// Length of the file.
    pub(super) bytes: u64,
    /// Records in the file.
    pub(super) records: u64,
}

/// One chunk's records (`u32 s, u32 d[, f64 w]`, dense ids) grouped by bucket: bucket `b`'s
/// are `bytes[ends[b - 1]..ends[b]]`. Routed on the workers, so the calling thread only
/// appends each bucket's bytes: per record, it took a quarter of the import's time.
#[derive(Debug)]
struct Routed {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    /// Input edges of the chunk.
    edges: u64,
}

/// The open bucket files of pass 2.
#[derive(Debug)]
pub(super) struct Buckets {
    writers: Vec<BufWriter<File>>,
    paths: Vec<PathBuf>,
    counts: Vec<u64>,
    weighted: bool,
}

impl Buckets {
    /// Creates `n` empty bucket files in `dir`, each behind a `buf`-byte write buffer.
    pub(super) fn create(
        dir: &Path,
        n: usize,
        buf: usize,
        weighted: bool,
    ) -> Result<Buckets, Error> {
        let mut writers = Vec::with_capacity(n);
        let mut paths = Vec::with_capacity(n);
        for i in 0..n {
            let p = dir.join(format!("bucket-{i}.tmp"));
            let f = File::create(&p).map_err(|e| Error::io(&p, "cannot create scratch file", e))?;
            writers.push(BufWriter::with_capacity(buf, f));
            paths.push(p);
        }
        Ok(Buckets { writers, paths, counts: vec![0; n], weighted })
    }

    /// Bytes of one record.
    fn record_bytes(&self) -> usize {
        if self.weighted { 16 } else { 8 }
    }

    /// Appends whole records to bucket `b`.
    fn append(&mut self, b: usize, records: &[u8]) -> Result<(), Error> {
        self.counts[b] += (records.len() / self.record_bytes()) as u64;
        self.writers[b]
            .write_all(records)
            .map_err(|e| Error::io(&self.paths[b], "scratch write failed", e))
    }

    /// Flushes every bucket and describes it.
    pub(super) fn finish(self) -> Result<Vec<Bucket>, Error> {
        let rec = self.record_bytes() as u64;
        let mut out = Vec::new();
        for ((mut w, p), c) in self.writers.into_iter().zip(self.paths).zip(self.counts) {
            w.flush().map_err(|e| Error::io(&p, "scratch write failed", e))?;
            out.push(Bucket { path: p, bytes: c * rec, records: c });
        }
        Ok(out)
    }
}

/// Which bucket an edge goes to.
#[derive(Debug, Clone, Copy)]
pub(super) struct Route {
    /// Vertices per partition.
    pub(super) psize: u64,
    /// Partitions per column group.
    pub(super) cols_per_group: u64,
    pub(super) directed: bool,
}

/// Buckets every edge of `source`; returns the number of input edges.
pub(super) fn bucket_edges(
    source: &Source<'_>,
    lookup: &Lookup,
    pipeline: &Pipeline,
    progress: Option<&Progress>,
    buckets: &mut Buckets,
    route: &Route,
) -> Result<u64, Error> {
    let mut input_edges = 0u64;
    let (nbuckets, rec) = (buckets.writers.len(), buckets.record_bytes());
    // The column group of a dense id. Partitions are 65536 vertices wide when there are
    // several (`store::layout_for`), so a shift and a table lookup replace a 64-bit division.
    let shift = route.psize.trailing_zeros();
    let pow2 = route.psize.is_power_of_two();
    let nparts = (u32::MAX as u64 / route.psize + 1) as usize;
    let table: Vec<u32> =
        (0..nparts.min(1 << 16)).map(|p| (p as u64 / route.cols_per_group) as u32).collect();
    let group_of = |v: u32| -> usize {
        match pow2 {
            true => table.get((v >> shift) as usize).copied().unwrap_or(0) as usize,
            false => (v as u64 / route.psize / route.cols_per_group) as usize,
        }
    };
    // The records of edge (a, b): (a, b) into b's group, then (undirected, unless a self
    // loop) (b, a) into a's.
    let twice = |a: u32, b: u32| !route.directed && a != b;
    let per_chunk = |raw: RawEdges| -> Result<Routed, (usize, String)> {
        let n = raw.src.len();
        let (mut xs, mut ys) = (Vec::with_capacity(n), Vec::with_capacity(n));
        // The first edge with an id that is not a vertex, whichever end.
        let missing = |ids: &[u64], got: Result<(), usize>| got.err().map(|i| (i, ids[i]));
        let bad = [missing(&raw.src, lookup.get_all(&raw.src, &mut xs))]
            .into_iter()
            .chain([missing(&raw.dst, lookup.get_all(&raw.dst, &mut ys))])
            .flatten()
            .min_by_key(|&(i, _)| i);
        if let Some((i, v)) = bad {
            return Err((i, format!("vertex {v} is not in the vertex file")));
        }
        // A counting sort of the records by bucket, in input order within each. The group is
        // found again in the second loop (a shift and a load from a small table), which is
        // cheaper than writing it and reading it back beside the ids.
        let mut ends = vec![0usize; nbuckets];
        for (&x, &y) in xs.iter().zip(&ys) {
            ends[group_of(y)] += rec;
            if twice(x, y) {
                ends[group_of(x)] += rec;
            }
        }
        let mut at = 0;
        for e in &mut ends {
            (*e, at) = (at, at + *e);
        }
        let mut bytes = vec![0u8; at];
        let mut put = |k: usize, s: u32, d: u32, w: f64| {
            let r = &mut bytes[ends[k]..ends[k] + rec];
            r[..4].copy_from_slice(&s.to_le_bytes());
            r[4..8].copy_from_slice(&d.to_le_bytes());
            if rec == 16 {
                r[8..].copy_from_slice(&w.to_le_bytes());
            }
            ends[k] += rec;
        };
        for (i, (&a, &b)) in xs.iter().zip(&ys).enumerate() {
            let w = raw.w.get(i).copied().unwrap_or(1.0);
            put(group_of(b), a, b, w);
            if twice(a, b) {
                put(group_of(a), b, a, w);
            }
        }
        Ok(Routed { bytes, ends, edges: n as u64 })
    };
    let mut err: Option<Error> = None;
    let mut sink = |Routed { bytes, ends, edges }: Routed| {
        if err.is_some() {
            return;
        }
        input_edges += edges;
        let mut at = 0;
        for (b, &end) in ends.iter().enumerate() {
            if end > at {
                if let Err(e) = buckets.append(b, &bytes[at..end]) {
                    err = Some(e);
                    return;
                }
            }
            at = end;
        }
    };
    let res = for_each_chunk(source, pipeline, progress, &per_chunk, &mut sink);
    if let Some(e) = err {
        return Err(e);
    }
    res?;
    if let Some((_, _, nnz)) = source.mtx {
        if nnz != input_edges {
            return Err(Error::Input {
                path: source.files[0].path.clone(),
                msg: format!("the size line promises {nnz} entries, the file has {input_edges}"),
            });
        }
    }
    Ok(input_edges)
}
