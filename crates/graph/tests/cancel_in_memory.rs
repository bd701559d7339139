//! Cancellation of the in-memory passes (a front end's Ctrl-C, `PipelineBuilder::cancel`): the
//! edge visit (WCC's pass) and the adjacency passes (CDLP's and LCC's) stop with `Cancelled`
//! once the flag is set, part way through, instead of running to the end; with the flag clear
//! the same graph gives the same results as when streamed from disk.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use sluice_graph::algo::{cdlp, lcc, wcc};
use sluice_graph::import::{Format, ImportOptions, import};
use sluice_graph::{Direction, Error, Graph, Neighbours};
use sluice_io::{Budget, PipelineBuilder};

/// 300 000 vertices (5 partitions of 2^16, 25 blocks) and 600 000 random edges.
const N: u64 = 300_000;
const M: u64 = 600_000;

/// A graph in memory whose pipeline watches the returned flag, and the same graph streamed.
fn graphs(dir: &std::path::Path) -> (Graph, Graph, Arc<AtomicBool>) {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % N
    };
    let text: String = (0..M).map(|_| format!("{} {}\n", next(), next())).collect();
    let input = dir.join("g.txt");
    std::fs::write(&input, text).unwrap();
    let store = dir.join("g.grid");
    let mut opts = ImportOptions::new(Format::Snap);
    opts.directed = Some(true);
    let pipeline = PipelineBuilder::new().build().unwrap();
    import(&[input], &store, &opts, &pipeline, &Budget::unlimited()).unwrap();
    let flag = Arc::new(AtomicBool::new(false));
    let watched = PipelineBuilder::new().cancel(flag.clone()).build().unwrap();
    let mut g = Graph::open(&store, watched, Budget::unlimited()).unwrap();
    g.load_edges().unwrap();
    assert!(g.is_in_memory() && g.meta().partitions >= 4, "{:?}", g.meta());
    let disk = Graph::open(&store, pipeline, Budget::unlimited()).unwrap();
    (g, disk, flag)
}

fn cancelled<T: std::fmt::Debug>(r: Result<T, Error>) -> bool {
    matches!(r, Err(Error::Pipeline(sluice_io::Error::Cancelled)))
}

#[test]
fn in_memory_passes_stop_when_the_flag_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let (g, disk, flag) = graphs(dir.path());
    // Flag clear: the in-memory results equal the streamed ones.
    assert_eq!(wcc::wcc(&g).unwrap(), wcc::wcc(&disk).unwrap());
    assert_eq!(cdlp::cdlp(&g, 3).unwrap().labels, cdlp::cdlp(&disk, 3).unwrap().labels);
    assert_eq!(lcc::lcc(&g).unwrap(), lcc::lcc(&disk).unwrap());

    // The edge visit: the flag set at the first edge stops the pass after the blocks in flight
    // (one per pool thread), well before all 25 blocks are visited.
    let seen = AtomicU64::new(0);
    let r = g.for_each_edge(Direction::Out, |_, _| {
        flag.store(true, Ordering::Relaxed);
        seen.fetch_add(1, Ordering::Relaxed);
    });
    assert!(cancelled(r));
    assert!(seen.load(Ordering::Relaxed) < M, "visited {} of {M} edges", seen.into_inner());
    assert!(cancelled(wcc::wcc(&g)));

    // The adjacency passes: the flag set in the first partition's callback stops the pass
    // before the next partition is built.
    flag.store(false, Ordering::Relaxed);
    let mut parts = 0;
    let r = g.stream_adjacency(Neighbours::Both, false, |_| {
        flag.store(true, Ordering::Relaxed);
        parts += 1;
        Ok(())
    });
    assert!(cancelled(r));
    assert_eq!(parts, 1);
    assert!(cancelled(cdlp::cdlp(&g, 3)));
    assert!(cancelled(lcc::lcc(&g)));

    // Cleared again, the graph is as good as before.
    flag.store(false, Ordering::Relaxed);
    assert_eq!(wcc::wcc(&g).unwrap(), wcc::wcc(&disk).unwrap());
}
