//! The engine on a graph with several partitions (P > 1), in both modes (streaming through
//! the block pipeline, and in memory), against naive implementations written here; plus
//! determinism, selective scheduling, a corrupt block found mid-pass, and the pipeline figures
//! of passes (mapped bytes over a cached store, weights read as plan extents).

use std::collections::VecDeque;
use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sluice_graph::algo::{bfs, pagerank, spmv, wcc};
use sluice_graph::import::{Format, ImportOptions, import};
use sluice_graph::{Error, Graph};
use sluice_io::{Budget, DirectMode, Engine, PipelineBuilder};

const N: u64 = 150_000; // > 2 partitions of 65536

/// A seeded directed multigraph: sparse random edges (with duplicates and self loops) plus a
/// few isolated vertices; original ids are 3·v + 7 (sparse, order-preserving).
fn edges() -> Vec<(u64, u64)> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(42);
    let mut e = Vec::new();
    for _ in 0..300_000 {
        let s = rng.gen_range(0..N - 100);
        // Locality plus long jumps, so blocks off the diagonal are used too.
        let d = if rng.gen_bool(0.5) {
            (s + rng.gen_range(0..50)) % (N - 100)
        } else {
            rng.gen_range(0..N - 100)
        };
        e.push((s, d));
    }
    e.push((5, 5));
    e.push((5, 6));
    e.push((5, 6));
    e
}

fn write_and_import(dir: &Path, e: &[(u64, u64)], directed: bool) -> std::path::PathBuf {
    let text: String = e.iter().map(|(s, d)| format!("{} {}\n", 3 * s + 7, 3 * d + 7)).collect();
    let input = dir.join(format!("g{directed}.txt"));
    std::fs::write(&input, text).unwrap();
    let store = dir.join(format!("g{directed}.grid"));
    let mut o = ImportOptions::new(Format::Snap);
    o.directed = Some(directed);
    let pipeline = PipelineBuilder::new().block_size(64 << 10).build().unwrap();
    import(&[input], &store, &o, &pipeline, &Budget::unlimited()).unwrap();
    store
}

fn open(store: &Path, in_memory: bool) -> Graph {
    let pipeline = PipelineBuilder::new().block_size(64 << 10).build().unwrap();
    let mut g = Graph::open(store, pipeline, Budget::unlimited()).unwrap();
    if in_memory {
        g.load_edges().unwrap();
    }
    g
}

/// Dense ids of the vertices that occur in `e` (as import numbers them).
fn dense(e: &[(u64, u64)]) -> (Vec<u64>, Vec<(usize, usize)>) {
    let mut ids: Vec<u64> = e.iter().flat_map(|&(a, b)| [a, b]).collect();
    ids.sort_unstable();
    ids.dedup();
    let pairs = e
        .iter()
        .map(|&(a, b)| (ids.binary_search(&a).unwrap(), ids.binary_search(&b).unwrap()))
        .collect();
    (ids, pairs)
}

fn naive_pr(n: usize, arcs: &[(usize, usize)], iters: usize) -> Vec<f64> {
    let mut deg = vec![0usize; n];
    for &(s, _) in arcs {
        deg[s] += 1;
    }
    let mut r = vec![1.0 / n as f64; n];
    for _ in 0..iters {
        let sink: f64 = (0..n).filter(|&v| deg[v] == 0).map(|v| r[v]).sum();
        let mut next = vec![0.15 / n as f64 + 0.85 * sink / n as f64; n];
        for &(s, d) in arcs {
            next[d] += 0.85 * r[s] / deg[s] as f64;
        }
        r = next;
    }
    r
}

fn naive_bfs(n: usize, arcs: &[(usize, usize)], root: usize) -> Vec<u32> {
    let mut adj = vec![Vec::new(); n];
    for &(s, d) in arcs {
        adj[s].push(d);
    }
    let mut depth = vec![u32::MAX; n];
    depth[root] = 0;
    let mut q = VecDeque::from([root]);
    while let Some(u) = q.pop_front() {
        for &v in &adj[u] {
            if depth[v] == u32::MAX {
                depth[v] = depth[u] + 1;
                q.push_back(v);
            }
        }
    }
    depth
}

fn naive_wcc(n: usize, arcs: &[(usize, usize)]) -> Vec<u32> {
    let mut p: Vec<usize> = (0..n).collect();
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    for &(a, b) in arcs {
        let (x, y) = (find(&mut p, a), find(&mut p, b));
        if x != y {
            p[x.max(y)] = x.min(y);
        }
    }
    (0..n).map(|v| find(&mut p, v) as u32).collect()
}

#[test]
fn several_partitions_both_modes_match_naive_implementations() {
    let dir = tempfile::tempdir().unwrap();
    let e = edges();
    let (ids, pairs) = dense(&e);
    let n = ids.len();
    for directed in [true, false] {
        let store = write_and_import(dir.path(), &e, directed);
        let arcs: Vec<(usize, usize)> = if directed {
            pairs.clone()
        } else {
            pairs
                .iter()
                .flat_map(|&(a, b)| if a == b { vec![(a, b)] } else { vec![(a, b), (b, a)] })
                .collect()
        };
        let want_pr = naive_pr(n, &arcs, 5);
        let want_bfs = naive_bfs(n, &arcs, 0);
        let want_wcc = naive_wcc(n, &arcs);
        let mut prs = Vec::new();
        for in_memory in [false, true] {
            let g = open(&store, in_memory);
            assert!(g.meta().partitions >= 2, "test needs P > 1");
            assert_eq!(g.num_vertices(), n);
            assert_eq!(g.original_ids()[0], 3 * ids[0] + 7);
            let opts = pagerank::PageRankOptions { iterations: 5, damping: 0.85, tolerance: None };
            let pr = pagerank::pagerank(&g, &opts).unwrap();
            assert_eq!(pr.ranks.len(), want_pr.len());
            for (v, (got, want)) in pr.ranks.iter().zip(&want_pr).enumerate() {
                assert!(
                    (got - want).abs() <= 1e-12 * want,
                    "PR {v} directed={directed} mem={in_memory}"
                );
            }
            prs.push(pr.ranks);
            assert_eq!(
                bfs::bfs(&g, g.original_ids()[0]).unwrap(),
                want_bfs,
                "BFS directed={directed} mem={in_memory}"
            );
            // The last levels from kept edges (bfs.rs): never, from some level on, from the
            // first; from a spread of roots, against the naive BFS. Keeping from the first
            // level streams the grid once and runs every later level in memory.
            let max_in = *g.in_degree().iter().max().unwrap();
            for root in (0..n).step_by(n / 5 + 1).chain([1, 5]) {
                let want = naive_bfs(n, &arcs, root);
                for keep in [0, arcs.len() as u64 / 8, u64::MAX] {
                    let _ = g.take_stats();
                    let when = |l: &bfs::Level| (l.live_edges <= keep).then_some(u32::MAX);
                    let got = bfs::bfs_keeping(&g, g.original_ids()[root], when).unwrap();
                    let passes = g.take_stats().passes;
                    let what = format!("BFS from {root} keeping {keep}: directed={directed}");
                    assert_eq!(got, want, "{what} mem={in_memory}");
                    if keep == u64::MAX && arcs.iter().any(|&(s, _)| s == root) {
                        assert_eq!(passes, 1, "{what}: passes");
                    }
                }
                // Keeping only the edges into vertices of in-degree up to a cap, from the
                // first level on (from two roots): below the largest in-degree the search must
                // notice the vertices left unreached with more in-edges than it kept and go on
                // streaming;
                // at it, the one pass keeps everything. And within 1/8 of the live edges, at
                // any level (`bfs`'s own policy).
                let caps = if root <= 1 { vec![2, max_in / 2, max_in] } else { vec![] };
                for cap in caps {
                    let _ = g.take_stats();
                    let got = bfs::bfs_keeping(&g, g.original_ids()[root], |_| Some(cap)).unwrap();
                    let passes = g.take_stats().passes;
                    let what = format!("BFS from {root}, in-degree cap {cap}: directed={directed}");
                    assert_eq!(got, want, "{what} mem={in_memory}");
                    if cap == max_in && arcs.iter().any(|&(s, _)| s == root) {
                        assert_eq!(passes, 1, "{what}: passes");
                    }
                }
                let most = arcs.len() as u64 / 8;
                let got = bfs::bfs_keeping(&g, g.original_ids()[root], |l| l.cap_within(most));
                let what = format!("BFS from {root} keeping 1/8: directed={directed}");
                assert_eq!(got.unwrap(), want, "{what} mem={in_memory}");
            }
            let _ = g.take_stats();
            assert_eq!(wcc::wcc(&g).unwrap(), want_wcc, "WCC directed={directed} mem={in_memory}");
            // Issue 15: union-find reads every edge once, in one pass over one grid.
            let st = g.take_stats();
            assert_eq!(st.passes, 1, "WCC passes");
            assert_eq!(st.edges_streamed, g.meta().num_edges, "WCC edges streamed");
        }
        // Issue 15 (reliability): streaming and in-memory PageRank run the same edge loop over
        // the same edges in the same order (engine rule 2): the same bits.
        assert_eq!(prs[0], prs[1], "streaming and in-memory PR differ (directed={directed})");
        // Determinism within a mode: run the streaming PR again.
        let g = open(&store, false);
        let opts = pagerank::PageRankOptions { iterations: 5, damping: 0.85, tolerance: None };
        assert_eq!(
            pagerank::pagerank(&g, &opts).unwrap().ranks,
            prs[0],
            "streaming PR is deterministic"
        );
        let want_bfs = bfs::bfs(&g, g.original_ids()[0]).unwrap();
        // Buffered reads into the pipeline's own buffers (not mapped, nothing cached): the
        // edge loop runs over the held read buffers themselves (`engine/disk.rs`, no copy),
        // and over copies once half the pool is held. The same bits.
        let pipeline = PipelineBuilder::new()
            .engine(Engine::Ioc)
            .direct(DirectMode::Never)
            .mmap(false)
            .block_size(64 << 10)
            .build()
            .unwrap();
        let held = Graph::open(&store, pipeline, Budget::unlimited()).unwrap();
        held.set_cache(false);
        let pr = pagerank::pagerank(&held, &opts).unwrap().ranks;
        assert_eq!(pr, prs[0], "PR over held read buffers (directed={directed})");
        assert_eq!(held.take_stats().run.mapped_bytes, 0, "nothing mapped");
        let depths = bfs::bfs(&held, held.original_ids()[0]).unwrap();
        assert_eq!(depths, want_bfs, "BFS over held read buffers (directed={directed})");
        // Rule 2 whatever the number of columns a task applies together (in memory and from
        // the block cache, which serves every pass after the first): P = 3, so groups of 2
        // leave one column alone.
        for in_memory in [false, true] {
            let g = open(&store, in_memory);
            for group in [2, 3] {
                g.set_column_group(group);
                let pr = pagerank::pagerank(&g, &opts).unwrap().ranks;
                assert_eq!(pr, prs[0], "PR, {group} columns a task (memory={in_memory})");
                let depths = bfs::bfs(&g, g.original_ids()[0]).unwrap();
                assert_eq!(depths, want_bfs, "BFS, {group} columns a task (memory={in_memory})");
            }
        }
    }
}

#[test]
fn tolerance_stops_early_and_only_then() {
    let dir = tempfile::tempdir().unwrap();
    let store = write_and_import(dir.path(), &edges()[..20_000], true);
    let g = open(&store, true);
    let run = |tol| {
        pagerank::pagerank(
            &g,
            &pagerank::PageRankOptions { iterations: 200, damping: 0.85, tolerance: tol },
        )
        .unwrap()
    };
    let r = run(Some(1e-6));
    assert!(r.iterations < 200 && r.last_change < 1e-6);
    assert_eq!(run(None).iterations, 200);
}

#[test]
fn a_corrupt_block_is_an_error_mid_pass() {
    let dir = tempfile::tempdir().unwrap();
    let store = write_and_import(dir.path(), &edges(), true);
    let path = store.join("fwd.edges");
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2 / 4 * 4;
    bytes[mid + 1] ^= 0x5a;
    std::fs::write(&path, bytes).unwrap();
    let g = open(&store, false);
    let opts = pagerank::PageRankOptions { iterations: 1, damping: 0.85, tolerance: None };
    match pagerank::pagerank(&g, &opts) {
        Err(Error::Corrupt { msg, .. }) => assert!(msg.contains("checksum"), "{msg}"),
        other => panic!("expected a checksum error, got {other:?}"),
    }
    match wcc::wcc(&g) {
        Err(Error::Corrupt { msg, .. }) => assert!(msg.contains("checksum"), "{msg}"),
        other => panic!("expected a checksum error from WCC's unordered pass, got {other:?}"),
    }
    let pipeline = PipelineBuilder::new().build().unwrap();
    let mut g = Graph::open(&store, pipeline, Budget::unlimited()).unwrap();
    assert!(matches!(g.load_edges(), Err(Error::Corrupt { .. })));
    assert!(matches!(sluice_graph::verify(&store), Err(Error::Corrupt { .. })));
}

#[test]
fn a_pass_over_a_cached_store_reports_its_mapped_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let store = write_and_import(dir.path(), &edges(), true);
    // Read the edges once so the page cache holds them: the IOC engine then maps the file.
    let edges_file = store.join("fwd.edges");
    let len = std::fs::read(&edges_file).unwrap().len() as u64;
    let pipeline = PipelineBuilder::new()
        .engine(Engine::Ioc)
        .direct(DirectMode::Auto)
        .mmap(true)
        .block_size(64 << 10)
        .build()
        .unwrap();
    let g = Graph::open(&store, pipeline, Budget::unlimited()).unwrap();
    // Both passes from the file: the block cache would serve the second (tests/block_cache.rs).
    g.set_cache(false);
    let opts = pagerank::PageRankOptions { iterations: 2, damping: 0.85, tolerance: None };
    pagerank::pagerank(&g, &opts).unwrap();
    let run = g.take_stats().run;
    let Some(f) = run.files.iter().find(|f| f.path == edges_file) else {
        panic!("the pass read no fwd.edges: {:?}", run.files);
    };
    if !f.mapped {
        eprintln!("skipped: fwd.edges was not mapped here ({})", f.reason);
        return;
    }
    assert!(run.mapped_bytes > 0, "a mapped pass reported 0 mapped bytes: {run:?}");
    assert_eq!(run.mapped_bytes, 2 * len, "both passes' mapped bytes are counted");
}

#[test]
fn a_weighted_pass_reads_the_weights_through_the_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let text: String =
        edges().iter().map(|(s, d)| format!("{s} {d} {}\n", (s * 7 + d) % 13)).collect();
    let input = dir.path().join("w.txt");
    std::fs::write(&input, text).unwrap();
    let store = dir.path().join("w.grid");
    let mut o = ImportOptions::new(Format::Snap);
    o.directed = Some(true);
    let pipeline = PipelineBuilder::new().build().unwrap();
    import(&[input], &store, &o, &pipeline, &Budget::unlimited()).unwrap();
    let pipeline = PipelineBuilder::new().direct(DirectMode::Never).mmap(false).build().unwrap();
    let g = Graph::open(&store, pipeline, Budget::unlimited()).unwrap();
    assert!(g.meta().weighted);
    let x = vec![1.0; g.num_vertices()];
    let y = spmv::spmv(&g, &x).unwrap();
    let run = g.take_stats().run;
    assert_eq!(run.bytes_read, g.meta().num_edges * 12, "4 bytes per edge plus 8 per weight");
    let mut mem =
        Graph::open(&store, PipelineBuilder::new().build().unwrap(), Budget::unlimited()).unwrap();
    mem.load_edges().unwrap();
    let want = spmv::spmv(&mem, &x).unwrap();
    for (a, b) in y.iter().zip(&want) {
        assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "spmv streamed {a} vs in memory {b}");
    }
}

/// `Graph::for_each_edge` (issue 15; `engine/disk/visit.rs` rule 1): every stored edge exactly
/// once, as global dense ids, in both modes; `Direction::Both` on a directed store gives each
/// edge once forward and once reversed.
#[test]
fn for_each_edge_sees_every_stored_edge_once() {
    use sluice_graph::Direction;
    use std::sync::Mutex;
    let dir = tempfile::tempdir().unwrap();
    let e = edges();
    let (_, pairs) = dense(&e);
    let store = write_and_import(dir.path(), &e, true);
    let mut want: Vec<(u32, u32)> = pairs.iter().map(|&(s, d)| (s as u32, d as u32)).collect();
    want.sort_unstable();
    let mut both: Vec<(u32, u32)> = want.iter().flat_map(|&(s, d)| [(s, d), (d, s)]).collect();
    both.sort_unstable();
    for in_memory in [false, true] {
        let g = open(&store, in_memory);
        for (dir, want) in [(Direction::Out, &want), (Direction::Both, &both)] {
            let seen = Mutex::new(Vec::new());
            g.for_each_edge(dir, |s, d| seen.lock().unwrap().push((s, d))).unwrap();
            let mut seen = seen.into_inner().unwrap();
            seen.sort_unstable();
            assert_eq!(&seen, want, "{dir:?} mem={in_memory}");
        }
        let st = g.take_stats();
        assert_eq!((st.passes, st.edges_streamed), (2, 3 * want.len() as u64));
    }
}
