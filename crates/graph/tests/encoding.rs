//! The packed edge encoding (`store::packed`, issue 15 lever 1): a store written packed holds
//! the raw store's edges block for block and edge for edge (weights unchanged, parallel to the
//! decoded order); every algorithm gives the same bits on both encodings, streaming (block cache
//! on and off) and in memory; a corrupt or cut packed file is an error naming the file and the
//! block; a partitioned packed store verifies and runs.

use std::path::{Path, PathBuf};

use sluice_graph::algo::pagerank::{PageRankOptions, pagerank};
use sluice_graph::algo::{bfs, cdlp, lcc, spmv, sssp, wcc};
use sluice_graph::import::{BinWeight, Format, ImportOptions, import};
use sluice_graph::kronecker::{self, GenOptions};
use sluice_graph::store::{Encoding, packed, read_meta};
use sluice_graph::{Error, Graph};
use sluice_io::{Budget, PipelineBuilder};

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/datasets");

/// Imports `inputs` twice, raw and packed: (raw store, packed store).
fn import_both(inputs: &[PathBuf], opts: &ImportOptions, dir: &Path, name: &str) -> [PathBuf; 2] {
    [Encoding::Raw, Encoding::Packed].map(|enc| {
        let out = dir.join(format!("{name}-{}.grid", enc.name()));
        let mut o = opts.clone();
        o.encoding = Some(enc);
        let pipeline = PipelineBuilder::new().build().unwrap();
        import(inputs, &out, &o, &pipeline, &Budget::unlimited()).unwrap();
        sluice_graph::verify(&out).unwrap();
        out
    })
}

fn u64s(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect()
}

/// Every grid of the packed store decodes, block by block, to the raw store's bytes; weights
/// and vertex files are the same bytes.
fn check_edge_for_edge(raw: &Path, packed_store: &Path) {
    let meta = read_meta(packed_store).unwrap();
    assert_eq!(meta.encoding, Encoding::Packed);
    assert_eq!(read_meta(raw).unwrap().encoding, Encoding::Raw);
    let blocks = (meta.partitions * meta.partitions) as usize;
    let grids: &[&str] = if meta.directed { &["fwd", "rev"] } else { &["fwd"] };
    for g in grids {
        let raw_edges = std::fs::read(raw.join(format!("{g}.edges"))).unwrap();
        let raw_index = u64s(&std::fs::read(raw.join(format!("{g}.index"))).unwrap());
        let edges = std::fs::read(packed_store.join(format!("{g}.edges"))).unwrap();
        let index = u64s(&std::fs::read(packed_store.join(format!("{g}.index"))).unwrap());
        let (offsets, bytes) = (&index[..blocks + 1], &index[blocks + 1..2 * blocks + 2]);
        assert_eq!(offsets, &raw_index[..blocks + 1], "{g}: edge offsets");
        // Packing pays where blocks are large (the Kronecker graphs; not the tiny LDBC sets).
        if offsets[blocks] >= 1024 * blocks as u64 {
            assert!(edges.len() * 10 < raw_edges.len() * 7, "{g}: packing pays");
        }
        for b in 0..blocks {
            let mut out = Vec::new();
            let n = offsets[b + 1] - offsets[b];
            let frames = &edges[bytes[b] as usize..bytes[b + 1] as usize];
            packed::unpack_block(frames, n, &mut out).unwrap();
            let want = &raw_edges[(offsets[b] * 4) as usize..(offsets[b + 1] * 4) as usize];
            assert!(out == want, "{g}: block {b} differs");
        }
        if meta.weighted {
            let w = |s: &Path| std::fs::read(s.join(format!("{g}.weights"))).unwrap();
            assert!(w(raw) == w(packed_store), "{g}: weights differ");
        }
    }
    for f in ["ids.bin", "out_degree.bin", "in_degree.bin"] {
        assert!(
            std::fs::read(raw.join(f)).unwrap() == std::fs::read(packed_store.join(f)).unwrap()
        );
    }
}

fn open(store: &Path, cache: bool) -> Graph {
    let budget = Budget::unlimited();
    let pipeline = PipelineBuilder::new().block_size(64 << 10).budget(budget.clone()).build();
    let g = Graph::open(store, pipeline.unwrap(), budget).unwrap();
    g.set_cache(cache);
    g
}

const NAMES: [&str; 7] = ["pagerank", "bfs", "sssp", "cdlp", "wcc", "spmv", "lcc"];

/// Every algorithm's output as bits.
fn run_all(g: &Graph, root: u64) -> Vec<Vec<u64>> {
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
    out.push(bits(&lcc::lcc(g).unwrap()));
    out
}

/// Raw streaming is the reference; packed streaming with the cache off and on (twice: the
/// second run served from the cache) and in memory give the same bits.
fn check_algorithms(raw: &Path, packed_store: &Path, root: u64) {
    let want = run_all(&open(raw, false), root);
    let on = open(packed_store, true);
    let mut runs = vec![("off", run_all(&open(packed_store, false), root))];
    runs.push(("on", run_all(&on, root)));
    runs.push(("on, from the cache", run_all(&on, root)));
    assert!(on.cache_report().resident_bytes > 0, "the packed columns are kept");
    let mut mem = open(packed_store, false);
    mem.load_edges().unwrap();
    runs.push(("in memory", run_all(&mem, root)));
    for (mode, got) in runs {
        for (i, name) in NAMES.iter().enumerate() {
            assert!(got[i] == want[i], "{}: {name} differs ({mode})", packed_store.display());
        }
    }
}

#[test]
fn ldbc_datasets_pack_edge_for_edge_and_give_the_same_results() {
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
        let [raw, packed_store] =
            import_both(&[props], &ImportOptions::new(Format::Ldbc), dir.path(), name);
        let default = dir.path().join(format!("{name}-default.grid"));
        let pipeline = PipelineBuilder::new().build().unwrap();
        let props = Path::new(SHARED).join(format!("ldbc/{name}/{name}.properties"));
        let opts = ImportOptions::new(Format::Ldbc);
        import(&[props], &default, &opts, &pipeline, &Budget::unlimited()).unwrap();
        assert_eq!(read_meta(&default).unwrap().encoding, Encoding::Raw, "raw by default");
        let root = open(&raw, false).original_ids().iter().copied().find(|&id| id >= root);
        check_edge_for_edge(&raw, &packed_store);
        check_algorithms(&raw, &packed_store, root.unwrap());
        seen += 1;
    }
    assert!(seen > 0 || !Path::new(SHARED).exists(), "no LDBC dataset found");
}

/// A weighted Kronecker graph of 2^18 vertex ids (several partitions), both encodings.
fn kron(dir: &Path, directed: bool) -> [PathBuf; 2] {
    let bin = dir.join("k.bin");
    if !bin.exists() {
        let o = GenOptions { scale: 18, edge_factor: 2, seed: 5, weights: true };
        kronecker::generate(&o, &bin, None).unwrap();
    }
    let mut opts = ImportOptions::new(Format::Bin);
    opts.bin_weight = BinWeight::F32;
    opts.directed = Some(directed);
    import_both(&[bin], &opts, dir, &format!("k-{directed}"))
}

#[test]
fn a_weighted_kronecker_graph_packs_edge_for_edge_and_gives_the_same_results() {
    let dir = tempfile::tempdir().unwrap();
    for directed in [true, false] {
        let [raw, packed_store] = kron(dir.path(), directed);
        let g = open(&raw, false);
        assert!(g.meta().partitions > 1, "the graph must span several partitions");
        let root = g.original_ids()[g.out_degree().iter().position(|&d| d > 0).unwrap()];
        drop(g);
        check_edge_for_edge(&raw, &packed_store);
        check_algorithms(&raw, &packed_store, root);
    }
}

/// Any flipped byte of a packed edge file (frame header, bit stream, padding) and a cut file
/// are errors naming the file (and the block, for a flipped byte), streaming and in memory.
#[test]
fn a_corrupt_or_cut_packed_store_is_an_error_naming_the_file_and_block() {
    let dir = tempfile::tempdir().unwrap();
    let [_, store] = kron(dir.path(), true);
    let path = store.join("fwd.edges");
    let good = std::fs::read(&path).unwrap();
    let o = PageRankOptions { iterations: 2, damping: 0.85, tolerance: None };
    let frame = packed::FRAME_BYTES;
    for at in [0, 5, 13, 17, 25, frame + 100, good.len() / 2, good.len() - 1] {
        let mut bad = good.clone();
        bad[at] ^= 0x04;
        std::fs::write(&path, &bad).unwrap();
        for memory in [false, true] {
            let mut g = open(&store, true);
            let r = match memory {
                true => g.load_edges().and_then(|()| pagerank(&g, &o).map(|_| ())),
                false => pagerank(&g, &o).map(|_| ()),
            };
            match r {
                Err(Error::Corrupt { path: p, msg }) => {
                    assert_eq!(p, path, "byte {at}");
                    assert!(msg.contains("block ("), "byte {at}: {msg}");
                }
                other => {
                    panic!("byte {at} (memory {memory}): a flipped byte went unseen: {other:?}")
                }
            }
            // WCC's unordered visit and LCC's adjacency stream check every block too.
            let g = open(&store, false);
            assert!(matches!(wcc::wcc(&g), Err(Error::Corrupt { .. })), "byte {at}: wcc");
            assert!(matches!(lcc::lcc(&g), Err(Error::Corrupt { .. })), "byte {at}: lcc");
        }
        assert!(sluice_graph::verify(&store).is_err(), "byte {at}: verify");
    }
    std::fs::write(&path, &good[..good.len() - frame]).unwrap();
    let pipeline = PipelineBuilder::new().build().unwrap();
    match Graph::open(&store, pipeline, Budget::unlimited()) {
        Err(Error::Corrupt { path: p, .. }) => assert_eq!(p, path),
        other => panic!("a cut file opened: {:?}", other.map(|_| ())),
    }
}

/// A packed store partitions as it is (block bytes copied) and each part verifies; the parts'
/// blocks hold the whole store's edges.
#[test]
fn a_packed_store_partitions_and_its_parts_verify() {
    let dir = tempfile::tempdir().unwrap();
    let [_, store] = kron(dir.path(), true);
    let out = dir.path().join("parts");
    let parts =
        sluice_graph::partition::partition(&store, 3, &out, false, &sluice_io::Budget::unlimited())
            .unwrap();
    let mut edges = 0u64;
    for r in 0..3 {
        let part = out.join(sluice_graph::partition::part_name(r));
        sluice_graph::verify(&part).unwrap();
        let g = open(&part, false);
        let n = std::sync::atomic::AtomicU64::new(0);
        g.for_each_edge(sluice_graph::Direction::Out, |_, _| {
            n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        })
        .unwrap();
        edges += n.into_inner();
    }
    assert_eq!(edges, parts.num_edges);
}

/// A raw store's `meta.json` does not name the encoding (the same bytes as stores written
/// before the field, which read as raw); a packed store's says `packed`.
#[test]
fn only_a_packed_store_names_its_encoding_and_raw_is_the_default() {
    let props = Path::new(SHARED).join("ldbc/example-directed/example-directed.properties");
    if !props.exists() {
        println!("skipping: {} not found", props.display());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let [raw, packed_store] =
        import_both(&[props], &ImportOptions::new(Format::Ldbc), dir.path(), "meta");
    let text = |s: &Path| std::fs::read_to_string(s.join("meta.json")).unwrap();
    assert!(!text(&raw).contains("\"encoding\""), "{}", text(&raw));
    assert!(text(&packed_store).contains("\"encoding\": \"packed\""));
    assert_eq!(read_meta(&raw).unwrap().encoding, Encoding::Raw);
}
