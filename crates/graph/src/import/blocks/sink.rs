//! The writer of pass 3: a grid's files written block by block in stream order ([`GridSink`]),
//! on a thread of their own while the next column group sorts ([`write_behind`]).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::SyncSender;

use sluice_io::{Budget, Reservation};

use super::{BlockOut, GridWritten};
use crate::Error;
use crate::store::{self, Encoding, GridIndex, Meta, SumWriter};

/// The files of a grid being written, block by block in stream order, and its index.
#[derive(Debug)]
pub(super) struct GridSink {
    index: GridIndex,
    ew: SumWriter,
    ww: Option<SumWriter>,
    counts: Vec<u64>,
    bytes: Vec<u64>,
    written: u64,
    self_loops: u64,
}

impl GridSink {
    pub(super) fn create(dir: &Path, grid: &str, meta: &Meta) -> Result<GridSink, Error> {
        let nblocks = (meta.partitions * meta.partitions) as usize;
        let weighted = meta.weighted;
        let index = GridIndex {
            offsets: vec![0; nblocks + 1],
            bytes: vec![0; nblocks + 1],
            packed: meta.encoding == Encoding::Packed,
            crcs: vec![0; nblocks],
            weight_crcs: vec![store::weights::block_sum(&[]); if weighted { nblocks } else { 0 }],
        };
        let ew = SumWriter::create(&dir.join(format!("{grid}.edges")))?;
        let ww = match weighted {
            true => Some(SumWriter::create(&dir.join(format!("{grid}.weights")))?),
            false => None,
        };
        let (counts, bytes) = (vec![0; nblocks], vec![0; nblocks]);
        Ok(GridSink { index, ew, ww, counts, bytes, written: 0, self_loops: 0 })
    }

    /// Appends block `b` of `edges` edges; blocks come in stream order (`b` ascending).
    pub(super) fn put(&mut self, b: usize, edges: u64, out: &BlockOut) -> Result<(), Error> {
        self.self_loops += out.self_loops;
        self.index.crcs[b] = crc32fast::hash(&out.edges);
        self.counts[b] = edges;
        self.bytes[b] = out.edges.len() as u64;
        self.ew.write(&out.edges)?;
        if let Some(ww) = self.ww.as_mut() {
            self.index.weight_crcs[b] = store::weights::block_sum(&out.weights);
            ww.write(&out.weights)?;
        }
        self.written += edges;
        Ok(())
    }

    /// Flushes the files and writes the index.
    pub(super) fn finish(mut self, dir: &Path, grid: &str) -> Result<GridWritten, Error> {
        // Blocks were written in column-major order: offsets are the prefix sums of the counts.
        let index = &mut self.index;
        for (b, &count) in self.counts.iter().enumerate() {
            index.offsets[b + 1] = index.offsets[b] + count;
            index.bytes[b + 1] = index.bytes[b] + self.bytes[b];
            if count == 0 {
                index.crcs[b] = crc32fast::hash(&[]);
            }
        }
        let mut files = vec![(format!("{grid}.edges"), self.ew.finish()?)];
        if let Some(ww) = self.ww {
            files.push((format!("{grid}.weights"), ww.finish()?));
        }
        let ipath = dir.join(format!("{grid}.index"));
        files.push((format!("{grid}.index"), store::write_file(&ipath, &self.index.to_bytes())?));
        let (edges, self_loops) = (self.written, self.self_loops);
        Ok(GridWritten { files, edges, self_loops, index: self.index })
    }
}

/// A column group's blocks, ready to write in stream order: (block, edges, bytes as stored),
/// and the reservation that holds them.
#[derive(Debug)]
pub(super) struct Batch {
    pub(super) blocks: Vec<(usize, u64, BlockOut)>,
    pub(super) _held: Reservation,
}

/// Where the sorting thread hands finished column groups to the writer ([`write_behind`]).
#[derive(Debug)]
pub(super) struct Feed<'a> {
    tx: SyncSender<Batch>,
    /// Whether the writer holds no batch (its memory given back).
    idle: &'a AtomicBool,
    budget: &'a Budget,
}

impl Feed<'_> {
    /// Reserves `bytes` for `what`. While the budget has no room and the writer holds a batch,
    /// waits for the writer to give it back; then fails as a plain reservation would.
    pub(super) fn reserve(&self, what: &str, bytes: u64) -> Result<Reservation, Error> {
        loop {
            // Read before trying: `idle` is set only after the batch's memory is given back.
            let idle = self.idle.load(Ordering::Acquire);
            match self.budget.reserve(what, bytes) {
                Ok(r) => return Ok(r),
                Err(e) if idle => return Err(e.into()),
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(1)),
            }
        }
    }

    /// Hands `batch` to the writer, waiting until it takes it. An error means the writer has
    /// stopped on an error of its own, which [`write_behind`] reports.
    pub(super) fn send(&self, batch: Batch) -> Result<(), Error> {
        self.idle.store(false, Ordering::Release);
        self.tx.send(batch).map_err(|_| Error::from(sluice_io::Error::Cancelled))
    }
}

/// Sets the flag when dropped (the writer's exit, by return or by panic).
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Runs `sort` with a writer thread beside it: the writer appends each batch `sort` feeds it
/// to `sink` while `sort` works on the next column group, so the writes (the copy into the
/// page cache, the CRC-32s, the writeback a memory cgroup forces) overlap the sorting. The
/// channel holds nothing: at most one group is being written while the next is sorted.
/// Returns the sink with every batch written; the writer's error comes first.
pub(super) fn write_behind<F>(sink: GridSink, budget: &Budget, sort: F) -> Result<GridSink, Error>
where
    F: FnOnce(&Feed<'_>) -> Result<(), Error>,
{
    let idle = AtomicBool::new(true);
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(0);
        let writer = std::thread::Builder::new()
            .name("sluice-import-writer".into())
            .spawn_scoped(scope, || -> Result<GridSink, Error> {
                let _idle = SetOnDrop(&idle);
                let mut sink = sink;
                for batch in rx {
                    for (b, edges, out) in &batch.blocks {
                        sink.put(*b, *edges, out)?;
                    }
                    drop(batch);
                    idle.store(true, Ordering::Release);
                }
                Ok(sink)
            })
            .map_err(|e| Error::io(Path::new("."), "cannot start the import's writer thread", e))?;
        let fed = sort(&Feed { tx, idle: &idle, budget });
        let written = writer.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        match (fed, written) {
            (_, Err(e)) | (Err(e), Ok(_)) => Err(e),
            (Ok(()), Ok(sink)) => Ok(sink),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(partitions: u64) -> Meta {
        Meta {
            format: store::FORMAT_NAME.into(),
            format_version: store::FORMAT_VERSION,
            num_vertices: 0,
            num_edges: 0,
            input_edges: 0,
            directed: true,
            weighted: false,
            simple: false,
            self_loops: 0,
            partitions,
            partition_size: store::MAX_PARTITION_SIZE,
            source_format: "test".into(),
            encoding: Encoding::Raw,
            files: Default::default(),
            part: None,
            meta_crc32: String::new(),
        }
    }

    /// A batch of block `b` holding `edges` edges of bytes `fill`.
    fn batch(feed: &Feed<'_>, b: usize, edges: usize, fill: u8) -> Result<Batch, Error> {
        let held = feed.reserve("a test batch", 600)?;
        let out = BlockOut { edges: vec![fill; edges * 4], ..BlockOut::default() };
        Ok(Batch { blocks: vec![(b, edges as u64, out)], _held: held })
    }

    /// The budget holds one batch at a time: each reservation waits for the writer to give the
    /// last batch back, every block lands in order, and a reservation that can never fit
    /// fails instead of waiting for ever.
    #[test]
    fn write_behind_waits_for_room_and_fails_without_hanging() {
        let dir = tempfile::tempdir().unwrap();
        let budget = Budget::new(64 << 20).unwrap();
        let _others =
            budget.reserve("what the rest of the process holds", budget.available() - 1000);
        let sink = GridSink::create(dir.path(), "fwd", &meta(2)).unwrap();
        let sink = write_behind(sink, &budget, |feed| {
            for b in 0..3 {
                feed.send(batch(feed, b, b + 1, b as u8 + 1)?)?;
            }
            Ok(())
        })
        .unwrap();
        let w = sink.finish(dir.path(), "fwd").unwrap();
        assert_eq!((w.edges, &w.index.offsets[..]), (6, &[0, 1, 3, 6, 6][..]));
        let bytes = std::fs::read(dir.path().join("fwd.edges")).unwrap();
        assert_eq!(bytes, [&[1u8; 4][..], &[2; 8], &[3; 12]].concat());
        assert_eq!(budget.available(), 1000, "every batch's memory given back");

        let sink = GridSink::create(dir.path(), "rev", &meta(2)).unwrap();
        let e = write_behind(sink, &budget, |feed| {
            feed.send(batch(feed, 0, 1, 1)?)?;
            feed.reserve("more than the budget", 1001).map(drop)
        });
        assert!(matches!(e, Err(Error::Pipeline(sluice_io::Error::OverBudget { .. }))), "{e:?}");
    }

    /// A write that fails on the writer thread is the error `write_behind` returns, naming the
    /// file, and the sorting side stops at its next hand-over.
    #[test]
    fn a_failed_write_behind_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/dev/full", dir.path().join("fwd.edges")).unwrap();
        let sink = GridSink::create(dir.path(), "fwd", &meta(2)).unwrap();
        let budget = Budget::unlimited();
        let e = write_behind(sink, &budget, |feed| {
            // More than the file's 1 MiB buffer, so the write reaches the device.
            for b in 0..4 {
                feed.send(batch(feed, b, 1 << 19, 7)?)?;
            }
            Ok(())
        });
        let e = e.expect_err("writing to /dev/full fails").to_string();
        assert!(e.contains("fwd.edges"), "{e}");
    }
}
