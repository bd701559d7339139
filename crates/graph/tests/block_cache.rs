//! The block cache of the streaming mode (engine module `cache`): results bit for bit equal
//! with the cache on and off (and in memory) on LDBC datasets and a weighted Kronecker graph;
//! later passes read only what is not kept; the cache is held against the budget; passes
//! without fills keep nothing; a corrupt block is still an error on its first read and is never
//! kept.

use std::path::{Path, PathBuf};

use sluice_graph::algo::pagerank::{PageRankOptions, pagerank};
use sluice_graph::algo::{bfs, cdlp, spmv, sssp, wcc};
use sluice_graph::import::{BinWeight, Format, ImportOptions, import};
use sluice_graph::kronecker::{self, GenOptions};
use sluice_graph::{Error, Graph};
use sluice_io::{Budget, PipelineBuilder};

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/datasets");

fn open(store: &Path, budget: Budget, cache: bool) -> Graph {
    let pipeline = PipelineBuilder::new().block_size(64 << 10).budget(budget.clone()).build();
    let g = Graph::open(store, pipeline.unwrap(), budget).unwrap();
    g.set_cache(cache);
    g
}

const NAMES: [&str; 6] = ["pagerank", "bfs", "sssp", "cdlp", "wcc", "spmv"];

/// Every algorithm's output as bits: PageRank (20 iterations), BFS, SSSP, CDLP, WCC, SpMV;
/// and the bytes each pass read.
fn run_all(g: &Graph, root: u64) -> (Vec<Vec<u64>>, Vec<u64>) {
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
    let wide = |v: &[u32]| v.iter().map(|&x| x as u64).collect::<Vec<u64>>();
    let o = PageRankOptions { iterations: 20, damping: 0.85, tolerance: None };
    let mut out = vec![bits(&pagerank(g, &o).unwrap().ranks)];
    out.push(wide(&bfs::bfs(g, root).unwrap()));
    out.push(bits(&sssp::sssp(g, root).unwrap()));
    out.push(wide(&cdlp::cdlp(g, 5).unwrap().labels));
    out.push(wide(&wcc::wcc(g).unwrap()));
    let x: Vec<f64> = (0..g.num_vertices()).map(|i| (i % 7) as f64 * 0.37 - 1.0).collect();
    out.push(bits(&spmv::spmv(g, &x).unwrap()));
    (out, g.take_stats().bytes_per_pass)
}

/// On, off and in memory agree bit for bit, whatever the number of columns a task applies
/// together; with everything kept, PageRank's passes after the first read nothing from disk.
fn check_store(store: &Path, root: u64) {
    let off = open(store, Budget::unlimited(), false);
    let (want, off_bytes) = run_all(&off, root);
    let on = open(store, Budget::unlimited(), true);
    on.set_column_group(3);
    let (got, on_bytes) = run_all(&on, root);
    for (i, name) in NAMES.iter().enumerate() {
        assert!(got[i] == want[i], "{}: {name} differs with the cache", store.display());
    }
    // An unlimited budget keeps every column the ordered passes read (the forward grid, with
    // its weights since SSSP's weighted pass): PageRank's 19 passes after its first read
    // nothing, and no run reads more than without the cache.
    let report = on.cache_report();
    assert!(report.resident_bytes > 0 && report.resident_bytes <= report.store_bytes);
    assert!(off_bytes[..20].iter().all(|&b| b > 0), "without the cache every pass reads");
    assert!(on_bytes[0] > 0 && on_bytes[1..20].iter().all(|&b| b == 0), "read {on_bytes:?}");
    let (on_total, off_total) = (on_bytes.iter().sum::<u64>(), off_bytes.iter().sum::<u64>());
    assert!(on_total < off_total, "{on_total} bytes read with the cache, {off_total} without");
    let mut mem = open(store, Budget::unlimited(), true);
    mem.load_edges().unwrap();
    for group in [1, 2, 0] {
        mem.set_column_group(group);
        let got = run_all(&mem, root).0;
        for (i, name) in NAMES.iter().enumerate() {
            assert!(got[i] == want[i], "{}: {name} differs in memory ({group})", store.display());
        }
    }
}

#[test]
fn ldbc_datasets_give_the_same_bits_with_and_without_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let mut seen = 0;
    for (name, root) in [
        ("example-directed", 1),
        ("example-undirected", 2),
        ("test-sssp-directed", 1),
        ("test-pr-directed", 1),
        ("test-bfs-undirected", 1),
    ] {
        let props = Path::new(SHARED).join(format!("ldbc/{name}/{name}.properties"));
        if !props.exists() {
            println!("skipping: {} not found", props.display());
            continue;
        }
        let store = dir.path().join(format!("{name}.grid"));
        let pipeline = PipelineBuilder::new().build().unwrap();
        import(
            &[props],
            &store,
            &ImportOptions::new(Format::Ldbc),
            &pipeline,
            &Budget::unlimited(),
        )
        .unwrap();
        let g = open(&store, Budget::unlimited(), false);
        let root = g.original_ids().iter().copied().find(|&id| id >= root).unwrap();
        drop(g);
        check_store(&store, root);
        seen += 1;
    }
    assert!(seen > 0 || !Path::new(SHARED).exists(), "no LDBC dataset found");
}

/// A weighted Kronecker graph of 2^18 vertex ids (several partitions), directed or not.
fn kron(dir: &Path, directed: bool) -> PathBuf {
    let bin = dir.join("k.bin");
    if !bin.exists() {
        let o = GenOptions { scale: 18, edge_factor: 2, seed: 5, weights: true };
        kronecker::generate(&o, &bin, None).unwrap();
    }
    let out = dir.join(format!("k-{directed}.grid"));
    let mut opts = ImportOptions::new(Format::Bin);
    opts.bin_weight = BinWeight::F32;
    opts.directed = Some(directed);
    let pipeline = PipelineBuilder::new().build().unwrap();
    import(&[bin], &out, &opts, &pipeline, &Budget::unlimited()).unwrap();
    out
}

#[test]
fn a_kronecker_graph_gives_the_same_bits_with_and_without_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    for directed in [true, false] {
        let store = kron(dir.path(), directed);
        let g = open(&store, Budget::unlimited(), false);
        assert!(g.meta().partitions > 1, "the graph must span several partitions");
        let root = g.original_ids()[g.out_degree().iter().position(|&d| d > 0).unwrap()];
        drop(g);
        check_store(&store, root);
    }
}

/// A budget that keeps part of the store: the cache stays within it (its reservation is what
/// the budget lost), later passes read less than the first but not nothing, same bits.
#[test]
fn a_small_budget_keeps_part_of_the_store_and_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = kron(dir.path(), true);
    let o = PageRankOptions { iterations: 6, damping: 0.85, tolerance: None };
    let want = pagerank(&open(&store, Budget::unlimited(), false), &o).unwrap().ranks;
    // The smallest budget (MiB steps) that runs and keeps something keeps part of the grid.
    let mut found = None;
    for mib in 24..160u64 {
        let budget = Budget::new(mib << 20).unwrap();
        let g = open(&store, budget.clone(), true);
        let before = budget.available();
        let Ok(got) = pagerank(&g, &o) else { continue };
        if g.cache_report().resident_bytes > 0 {
            found = Some((budget, g, before, got.ranks));
            break;
        }
    }
    let (budget, g, before, got) = found.expect("no budget up to 160 MiB keeps a column");
    assert_eq!(
        got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        want.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    );
    let report = g.cache_report();
    assert_eq!(before - budget.available(), report.resident_bytes, "the cache is held");
    let passes = g.take_stats().bytes_per_pass;
    let (first, last) = (passes[0], *passes.last().unwrap());
    assert!(last > 0 && last < first, "passes read {passes:?}, {report:?}");
    assert_eq!(first - last, report.resident_bytes, "each later pass skips what is kept");
    g.set_cache(false);
    assert_eq!(budget.available(), before, "turning the cache off returns its memory");
}

/// Rule 5: inside `without_cache_fills` passes keep nothing new but are served what is kept;
/// the same bits either way.
#[test]
fn passes_without_fills_keep_nothing_and_are_still_served() {
    let dir = tempfile::tempdir().unwrap();
    let store = kron(dir.path(), true);
    let o = PageRankOptions { iterations: 2, damping: 0.85, tolerance: None };
    let bits = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();
    let g = open(&store, Budget::unlimited(), true);
    let want = bits(pagerank(&open(&store, Budget::unlimited(), false), &o).unwrap().ranks);
    let got = g.without_cache_fills(|| pagerank(&g, &o)).unwrap().ranks;
    assert_eq!(bits(got), want);
    assert_eq!(g.cache_report().resident_bytes, 0, "a pass without fills kept a column");
    let read = g.take_stats().bytes_per_pass;
    assert!(read.len() == 2 && read.iter().all(|&b| b > 0), "passes read {read:?}");
    // Filled now, then served inside `without_cache_fills`: nothing read from disk.
    assert_eq!(bits(pagerank(&g, &o).unwrap().ranks), want);
    let kept = g.cache_report().resident_bytes;
    assert!(kept > 0);
    let _ = g.take_stats();
    let got = g.without_cache_fills(|| pagerank(&g, &o)).unwrap().ranks;
    assert_eq!(bits(got), want);
    assert_eq!(g.take_stats().bytes_per_pass, [0, 0], "the kept columns were not served");
    assert_eq!(g.cache_report().resident_bytes, kept);
    // And the fills are back after it.
    let g = open(&store, Budget::unlimited(), true);
    g.without_cache_fills(|| ());
    pagerank(&g, &o).unwrap();
    assert!(g.cache_report().resident_bytes > 0, "fills stayed off");
}

#[test]
fn a_corrupt_block_is_an_error_on_its_first_read_and_is_never_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = kron(dir.path(), true);
    let path = store.join("fwd.edges");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x10;
    std::fs::write(&path, bytes).unwrap();
    let g = open(&store, Budget::unlimited(), true);
    let o = PageRankOptions { iterations: 3, damping: 0.85, tolerance: None };
    for attempt in 0..2 {
        match pagerank(&g, &o) {
            Err(Error::Corrupt { path: p, .. }) => assert_eq!(p, path, "attempt {attempt}"),
            other => panic!("attempt {attempt}: a flipped bit went unseen: {other:?}"),
        }
    }
    // Columns read whole before the corrupt one are not kept either: the pass failed.
    assert_eq!(g.cache_report().resident_bytes, 0);
}
