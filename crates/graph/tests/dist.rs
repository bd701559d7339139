//! Distributed algorithms on a partitioned store (`notes/issue12.md`, item 3), run on the BSP
//! threads backend (one process per rank, each opening its own part; `scripts/mpi-graph-test`
//! runs the same under `mpirun`). Truth: the single-process algorithms on the whole store —
//! equal bitwise for integer outputs, within 1e-12 relative for PageRank and SpMV.

use std::path::Path;
use std::sync::Mutex;

use sluice_bsp::{Args, ExecConfig, exec_with};
use sluice_graph::algo::pagerank::PageRankOptions;
use sluice_graph::algo::{bfs, cdlp, pagerank, spmv, sssp, wcc};
use sluice_graph::dist::{self, DistGraph};
use sluice_graph::import::{BinWeight, Format, ImportOptions, import};
use sluice_graph::kronecker::{self, GenOptions};
use sluice_graph::partition::{self, partition};
use sluice_graph::{Error, Graph};
use sluice_io::{Budget, PipelineBuilder};

/// A weighted Kronecker graph of 2^18 vertex ids (those with edges fill 2 partitions),
/// directed or not.
fn store(dir: &Path, directed: bool) -> std::path::PathBuf {
    let bin = dir.join("k.bin");
    if !bin.exists() {
        let o = GenOptions { scale: 18, edge_factor: 2, seed: 11, weights: true };
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

fn open_whole(store: &Path) -> Graph {
    Graph::open(store, PipelineBuilder::new().build().unwrap(), Budget::unlimited()).unwrap()
}

/// Runs `f` on every part of `parts` (one BSP process each); returns each rank's result.
fn on_ranks<T: Send>(
    parts: &Path,
    ranks: u32,
    f: impl Fn(&mut sluice_bsp::Ctx, &DistGraph) -> Result<T, Error> + Sync,
) -> Vec<Result<T, String>> {
    let out: Mutex<Vec<(u32, Result<T, String>)>> = Mutex::new(Vec::new());
    let _ = exec_with(
        &ExecConfig::new(ranks, false),
        ranks,
        |ctx, s, p, _args| {
            let pipeline = PipelineBuilder::new().io_threads(1).build().unwrap();
            let got = DistGraph::open(parts, s as usize, p as usize, pipeline, Budget::unlimited())
                .and_then(|dg| f(ctx, &dg))
                .map_err(|e| chain(&e));
            out.lock().unwrap().push((s, got));
        },
        Args::none(),
    );
    let mut out = out.into_inner().unwrap();
    out.sort_by_key(|x| x.0);
    assert_eq!(out.len(), ranks as usize, "every rank reports");
    out.into_iter().map(|x| x.1).collect()
}

/// The error and its sources, as the CLI prints them.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text = format!("{text}: {c}");
        cause = c.source();
    }
    text
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs()))
}

#[test]
fn every_algorithm_equals_one_process_on_1_to_4_ranks() {
    let dir = tempfile::tempdir().unwrap();
    for directed in [true, false] {
        let whole = store(dir.path(), directed);
        let g = open_whole(&whole);
        assert!(g.meta().partitions >= 2, "the test needs several partitions");
        let root = g.original_ids()[0];
        let pr = PageRankOptions { iterations: 5, damping: 0.85, tolerance: None };
        let want_pr = pagerank::pagerank(&g, &pr).unwrap();
        let want_bfs = bfs::bfs(&g, root).unwrap();
        let want_wcc = wcc::wcc(&g).unwrap();
        let want_sssp = sssp::sssp(&g, root).unwrap();
        let x: Vec<f64> = (0..g.num_vertices()).map(|v| 1.0 + (v % 7) as f64 / 8.0).collect();
        let want_spmv = spmv::spmv(&g, &x).unwrap();
        let want_cdlp = cdlp::cdlp(&g, 4).unwrap();
        for ranks in 1..=4u32 {
            let parts = dir.path().join(format!("k-{directed}-{ranks}.parts"));
            let meta =
                partition(&whole, ranks, &parts, false, &sluice_io::Budget::unlimited()).unwrap();
            assert_eq!(meta.ranges.len(), ranks as usize);
            let got = on_ranks(&parts, ranks, |ctx, dg| {
                let (p, cost) = dist::pagerank(ctx, dg, &pr)?;
                assert_eq!(cost.table.len(), 5 + 1, "one superstep per iteration, one gather");
                let (b, _) = dist::bfs(ctx, dg, root)?;
                let (w, _) = dist::wcc(ctx, dg)?;
                let (s, _) = dist::sssp(ctx, dg, root)?;
                let (y, _) = dist::spmv(ctx, dg, &x)?;
                let (c, _) = dist::cdlp(ctx, dg, 4)?;
                Ok((p, b, w, s, y, c))
            });
            for (r, got) in got.into_iter().enumerate() {
                let (p, b, w, s, y, c) = got.unwrap();
                let case = format!("directed={directed} ranks={ranks} rank={r}");
                assert!(close(&p.ranks, &want_pr.ranks), "pagerank {case}");
                assert_eq!(p.iterations, want_pr.iterations, "{case}");
                assert_eq!(b, want_bfs, "bfs {case}");
                assert_eq!(w, want_wcc, "wcc {case}");
                assert!(
                    s.iter().zip(&want_sssp).all(|(a, b)| a.to_bits() == b.to_bits()),
                    "sssp {case}"
                );
                assert!(close(&y, &want_spmv), "spmv {case}");
                assert_eq!(c.labels, want_cdlp.labels, "cdlp {case}");
                assert_eq!(c.iterations, want_cdlp.iterations, "{case}");
            }
        }
    }
}

#[test]
fn a_corrupt_part_fails_every_rank_naming_the_rank_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let whole = store(dir.path(), true);
    let parts = dir.path().join("k.parts");
    partition(&whole, 3, &parts, false, &sluice_io::Budget::unlimited()).unwrap();
    // Flip one byte in the middle of a rank's forward edges (the last rank holding some): its
    // first pass fails the block checksum; the other ranks' next sync fails.
    let bad = (0..3).rev().find(|&r| {
        std::fs::metadata(parts.join(partition::part_name(r)).join("fwd.edges")).unwrap().len() > 0
    });
    let bad = bad.unwrap();
    let edges = parts.join(partition::part_name(bad)).join("fwd.edges");
    let mut bytes = std::fs::read(&edges).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&edges, bytes).unwrap();
    let start = std::time::Instant::now();
    let pr = PageRankOptions { iterations: 3, damping: 0.85, tolerance: None };
    let got = on_ranks(&parts, 3, |ctx, dg| dist::pagerank(ctx, dg, &pr).map(|_| ()));
    assert!(start.elapsed().as_secs() < 10);
    let errs: Vec<String> = got.into_iter().map(|r| r.unwrap_err()).collect();
    let file = format!("{}/fwd.edges", partition::part_name(bad));
    assert!(errs[bad].contains(&format!("rank {bad}")) && errs[bad].contains(&file), "{errs:?}");
    for (r, e) in errs.iter().enumerate().filter(|&(r, _)| r != bad) {
        assert!(e.contains(&format!("rank {r}: communication failed")), "{errs:?}");
    }

    // A part whose meta.json no longer matches parts.json is refused at open.
    let meta = parts.join(partition::part_name(2)).join("meta.json");
    let text = std::fs::read_to_string(&meta).unwrap();
    std::fs::write(&meta, text.replacen("\"simple\"", "\"simple\" ", 1)).unwrap();
    let got = on_ranks(&parts, 3, |ctx, dg| dist::wcc(ctx, dg).map(|_| ()));
    let e = got[2].as_ref().unwrap_err();
    assert!(e.contains("rank 2") && e.contains("part-0002/meta.json"), "{e}");
}
