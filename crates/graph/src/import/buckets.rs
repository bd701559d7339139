//! Pass 2: every edge, mapped to dense ids, appended to the scratch bucket file of its
//! destination column group (a group is `cols_per_group` partitions). Records are
//! `u32 s, u32 d[, f64 weight]`. An undirected edge `(a, b)` is bucketed as `(a, b)` and, unless
//! a self loop, `(b, a)`; a directed one only as `(a, b)`: pass 3 builds the reverse grid from
//! the forward one (`blocks::write_reverse`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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

/// Buckets every edge of `source`, with at most `queue_bytes` of routed chunks (and one more)
/// waiting for their writes; returns the number of input edges.
pub(super) fn bucket_edges(
    source: &Source<'_>,
    lookup: &Lookup,
    pipeline: &Pipeline,
    progress: Option<&Progress>,
    buckets: &mut Buckets,
    route: &Route,
    queue_bytes: u64,
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
    // The appends run on a thread of their own, behind a queue of at most `queue_bytes` of
    // routed chunks (and one more chunk when it is empty). In a memory cgroup the page cache
    // cannot hold the scratch: a write the kernel throttled until the cgroup's dirty pages were
    // written back stopped the calling thread, then the pipeline's workers behind it.
    let queued = AtomicU64::new(0);
    let (res, written) = std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::channel::<Routed>();
        let queued = &queued;
        let writer = std::thread::Builder::new()
            .name("sluice-import-buckets".into())
            .spawn_scoped(scope, move || -> Result<(), Error> {
                for Routed { bytes, ends, .. } in rx {
                    let mut at = 0;
                    for (b, &end) in ends.iter().enumerate() {
                        if end > at {
                            buckets.append(b, &bytes[at..end])?;
                        }
                        at = end;
                    }
                    queued.fetch_sub(bytes.len() as u64, Ordering::Release);
                }
                Ok(())
            })
            .map_err(|e| Error::io(Path::new("."), "cannot start the import's bucket writer", e));
        let writer = match writer {
            Ok(w) => w,
            Err(e) => return (Err(e), Ok(())),
        };
        let mut tx = Some(tx);
        let mut sink = |routed: Routed| {
            input_edges += routed.edges;
            let len = routed.bytes.len() as u64;
            // Room in the queue; a writer that stopped (on an error) takes nothing more.
            while queued.load(Ordering::Acquire) > 0
                && queued.load(Ordering::Acquire) + len > queue_bytes
                && !writer.is_finished()
            {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            queued.fetch_add(len, Ordering::AcqRel);
            if tx.as_ref().is_some_and(|t| t.send(routed).is_err()) {
                tx = None;
            }
        };
        let res = for_each_chunk(source, pipeline, progress, &per_chunk, &mut sink);
        // The writer ends once the queue's sender is gone.
        drop(tx);
        let written = writer.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (res, written)
    });
    // The writer's error first: a failed write makes the rest moot.
    written?;
    res?;
    if let Some((_, _, nnz)) = source.mtx
        && nnz != input_edges
    {
        return Err(Error::Input {
            path: source.files[0].path.clone(),
            msg: format!("the size line promises {nnz} entries, the file has {input_edges}"),
        });
    }
    Ok(input_edges)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::{Format, ImportOptions};
    use sluice_io::{Budget, PipelineBuilder};

    /// A bucket write that fails (a full disk: `/dev/full`) ends the pass with that error
    /// naming the bucket, after the writer thread has stopped taking chunks: no hang waiting on
    /// a queue nobody drains, and no chunk counted as written.
    #[test]
    fn a_failed_bucket_write_ends_the_pass_with_its_error() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("g.bin");
        // 200 000 directed edges (u32 pairs) over 1000 vertices: several pipeline blocks.
        let edges: Vec<u8> = (0..200_000u32)
            .flat_map(|i| [i % 1000, (i * 7 + 1) % 1000])
            .flat_map(|v| v.to_le_bytes())
            .collect();
        std::fs::write(&input, &edges).unwrap();
        let mut opts = ImportOptions::new(Format::Bin);
        opts.directed = Some(true);
        let source = super::super::describe::describe(&[input], &opts).unwrap();
        let budget = Budget::new(256 << 20).unwrap();
        let lookup = Lookup::new((0..1000).collect(), &budget);
        let pipeline = PipelineBuilder::new().block_size(1 << 16).build().unwrap();
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let mut buckets = Buckets {
            writers: vec![BufWriter::with_capacity(4096, full)],
            paths: vec![dir.path().join("bucket-0.tmp")],
            counts: vec![0],
            weighted: false,
        };
        let route = Route { psize: 1000, cols_per_group: 1, directed: true };
        let err = bucket_edges(&source, &lookup, &pipeline, None, &mut buckets, &route, 1 << 16)
            .unwrap_err()
            .to_string();
        assert!(err.contains("scratch write failed") && err.contains("bucket-0.tmp"), "{err}");
    }
}
