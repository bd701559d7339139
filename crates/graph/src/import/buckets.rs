//! Pass 2: every edge, mapped to dense ids, appended to the scratch bucket file of its
//! destination column group (a group is `cols_per_group` partitions). Records are
//! `u32 s, u32 d[, f64 weight]`. An undirected edge `(a, b)` is bucketed as `(a, b)` and, unless
//! a self loop, `(b, a)`; a directed one goes to the forward buckets and, reversed, to the
//! reverse buckets (`groups..2 * groups`).

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

/// One chunk's edges in dense ids, weights (if any) beside them.
#[derive(Debug)]
struct DenseEdges {
    s: Vec<u32>,
    d: Vec<u32>,
    w: Vec<f64>,
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

    /// Appends the record `(s, d, w)` to bucket `b` (`w` only when weighted).
    #[inline]
    fn push(&mut self, b: usize, s: u32, d: u32, w: f64) -> Result<(), Error> {
        let mut rec = [0u8; 16];
        rec[..4].copy_from_slice(&s.to_le_bytes());
        rec[4..8].copy_from_slice(&d.to_le_bytes());
        let len = if self.weighted {
            rec[8..].copy_from_slice(&w.to_le_bytes());
            16
        } else {
            8
        };
        self.counts[b] += 1;
        self.writers[b]
            .write_all(&rec[..len])
            .map_err(|e| Error::io(&self.paths[b], "scratch write failed", e))
    }

    /// Flushes every bucket and describes it.
    pub(super) fn finish(self) -> Result<Vec<Bucket>, Error> {
        let rec = if self.weighted { 16 } else { 8 };
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
    /// Column groups (forward buckets).
    pub(super) groups: u64,
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
    let per_chunk = |raw: RawEdges| -> Result<DenseEdges, (usize, String)> {
        let mut s = Vec::with_capacity(raw.src.len());
        let mut d = Vec::with_capacity(raw.src.len());
        for (i, (&a, &b)) in raw.src.iter().zip(&raw.dst).enumerate() {
            let x = lookup
                .get(a)
                .ok_or_else(|| (i, format!("vertex {a} is not in the vertex file")))?;
            let y = lookup
                .get(b)
                .ok_or_else(|| (i, format!("vertex {b} is not in the vertex file")))?;
            s.push(x);
            d.push(y);
        }
        Ok(DenseEdges { s, d, w: raw.w })
    };
    let mut err: Option<Error> = None;
    let group_of = |v: u32| (v as u64 / route.psize / route.cols_per_group) as usize;
    let mut sink = |DenseEdges { s, d, w }: DenseEdges| {
        if err.is_some() {
            return;
        }
        input_edges += s.len() as u64;
        for i in 0..s.len() {
            let wt = w.get(i).copied().unwrap_or(1.0);
            let (a, b) = (s[i], d[i]);
            let r = buckets.push(group_of(b), a, b, wt).and_then(|()| {
                if route.directed {
                    buckets.push(route.groups as usize + group_of(a), b, a, wt)
                } else if a != b {
                    buckets.push(group_of(a), b, a, wt)
                } else {
                    Ok(())
                }
            });
            if let Err(e) = r {
                err = Some(e);
                return;
            }
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
