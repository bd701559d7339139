//! Store integrity (issue 17, defects 2, 3 and 5): every byte an algorithm reads is covered by
//! a checksum it checks, and a store whose checksums were all recomputed after a hand edit
//! still fails its structural invariants on open.

use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sluice_graph::algo::spmv::spmv;
use sluice_graph::algo::sssp::sssp;
use sluice_graph::import::{Format, ImportOptions, import};
use sluice_graph::{Error, Graph};
use sluice_io::{Budget, PipelineBuilder};

const N: u64 = 140_000; // 3 partitions of 65536: several weight blocks per grid

/// Imports a seeded weighted directed graph.
fn weighted_store(dir: &Path) -> PathBuf {
    scaled_store(dir, "w", 1.0)
}

/// The graph of [`weighted_store`] with every weight times `scale`, at `dir/<name>.grid`.
fn scaled_store(dir: &Path, name: &str, scale: f64) -> PathBuf {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let mut text = String::new();
    for v in 0..N - 1 {
        // A path through every vertex (so every vertex is reached), plus random chords.
        let w = rng.gen_range(1..100) as f64 / 8.0 * scale;
        text.push_str(&format!("{v} {} {w}\n", v + 1));
    }
    for _ in 0..60_000 {
        let (s, d) = (rng.gen_range(0..N), rng.gen_range(0..N));
        let w = rng.gen_range(1..100) as f64 / 8.0 * scale;
        text.push_str(&format!("{s} {d} {w}\n"));
    }
    let input = dir.join(format!("{name}.txt"));
    std::fs::write(&input, text).unwrap();
    let store = dir.join(format!("{name}.grid"));
    let mut o = ImportOptions::new(Format::Snap);
    o.directed = Some(true);
    import(&[input], &store, &o, &pipeline(), &Budget::unlimited()).unwrap();
    store
}

fn pipeline() -> sluice_io::Pipeline {
    PipelineBuilder::new().block_size(64 << 10).build().unwrap()
}

fn open(store: &Path, in_memory: bool) -> Result<Graph, Error> {
    let mut g = Graph::open(store, pipeline(), Budget::unlimited())?;
    if in_memory {
        g.load_edges()?;
    }
    Ok(g)
}

/// Flips one bit of byte `at` of `store/name`.
fn flip(store: &Path, name: &str, at: usize) {
    let path = store.join(name);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[at] ^= 0x10;
    std::fs::write(&path, bytes).unwrap();
}

/// Runs sssp and spmv and expects each to fail naming `file`.
fn expect_corrupt(store: &Path, file: &str) {
    for in_memory in [false, true] {
        let run = || -> Result<(), Error> {
            let g = open(store, in_memory)?;
            sssp(&g, 0)?;
            spmv(&g, &vec![1.0; g.num_vertices()])?;
            Ok(())
        };
        let err = run().expect_err(&format!("in_memory={in_memory}: a flipped bit went unseen"));
        let msg = err.to_string();
        assert!(msg.contains(file), "in_memory={in_memory}: {msg}");
    }
}

#[test]
fn a_flipped_bit_in_the_weights_is_an_error_in_both_modes() {
    let dir = tempfile::tempdir().unwrap();
    let store = weighted_store(dir.path());
    let truth = sssp(&open(&store, false).unwrap(), 0).unwrap();
    assert_eq!(truth, sssp(&open(&store, true).unwrap(), 0).unwrap());
    let len = std::fs::metadata(store.join("fwd.weights")).unwrap().len() as usize;
    // A byte in the first block, one in the middle and the last byte; each in a fresh copy.
    for at in [3, len / 2 + 5, len - 1] {
        let copy = dir.path().join(format!("c{at}.grid"));
        copy_dir(&store, &copy);
        flip(&copy, "fwd.weights", at);
        expect_corrupt(&copy, "fwd.weights");
    }
    let rlen = std::fs::metadata(store.join("rev.weights")).unwrap().len() as usize;
    let copy = dir.path().join("rev.grid");
    copy_dir(&store, &copy);
    flip(&copy, "rev.weights", rlen / 3);
    // sssp and spmv follow out-edges only: the reverse weights are read by `verify`.
    let err = sluice_graph::verify(&copy).unwrap_err().to_string();
    assert!(err.contains("rev.weights"), "{err}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// Runs `f` on a thread and fails the test if it does not return within 20 s.
fn within_20s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(f()));
    rx.recv_timeout(std::time::Duration::from_secs(20)).expect("hung (no answer in 20 s)")
}

#[test]
fn a_fifo_in_the_store_is_an_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let store = weighted_store(dir.path());
    for name in ["fwd.edges", "rev.weights", "ids.bin", "meta.json"] {
        let copy = dir.path().join(format!("fifo-{name}"));
        copy_dir(&store, &copy);
        std::fs::remove_file(copy.join(name)).unwrap();
        let ok = std::process::Command::new("mkfifo").arg(copy.join(name)).status().unwrap();
        assert!(ok.success());
        let c = copy.clone();
        let err = within_20s(move || sluice_graph::verify(&c).map(|_| ()).unwrap_err().to_string());
        assert!(err.contains(name) && err.contains("not a regular file"), "{err}");
        let c = copy.clone();
        let err = within_20s(move || open(&c, true).map(|_| ()).unwrap_err().to_string());
        assert!(err.contains(name), "{err}");
    }
}

/// Replaces `store/name` with `bytes` and recomputes every checksum that covers it: the
/// file's entry in `meta.json` and `meta.json`'s own CRC-32 (store contract rule 3), as a
/// careful hand edit would.
fn rewrite(store: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(store.join(name), bytes).unwrap();
    let meta = store.join("meta.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
    v["files"][name]["len"] = (bytes.len() as u64).into();
    v["files"][name]["crc32"] = crc32fast::hash(bytes).into();
    v["meta_crc32"] = "00000000".into();
    let mut text = serde_json::to_vec_pretty(&v).unwrap();
    text.push(b'\n');
    let crc = format!("{:08x}", crc32fast::hash(&text));
    let text = String::from_utf8(text).unwrap().replace("\"00000000\"", &format!("\"{crc}\""));
    std::fs::write(&meta, text).unwrap();
}

fn u32s(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}
fn u32_bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn hand_edits_with_recomputed_checksums_fail_the_structural_checks() {
    let dir = tempfile::tempdir().unwrap();
    let store = weighted_store(dir.path());
    let pr = |s: &Path| {
        let g = open(s, false)?;
        sluice_graph::algo::pagerank::pagerank(&g, &PR_OPTS).map(|r| r.ranks)
    };
    let truth = pr(&store).unwrap();
    assert!(sluice_graph::verify(&store).is_ok());
    let out = u32s(&std::fs::read(store.join("out_degree.bin")).unwrap());
    let (a, b) = (10usize, 70_000usize); // partitions 0 and 1
    assert!(out[a] > 0 && out[b] > 0);
    let case = |tag: &str, edit: &dyn Fn(&Path)| -> String {
        let copy = dir.path().join(tag);
        copy_dir(&store, &copy);
        edit(&copy);
        match pr(&copy) {
            Ok(ranks) => panic!(
                "{tag}: ran ({} ranks differ)",
                ranks.iter().zip(&truth).filter(|(x, y)| x != y).count()
            ),
            Err(e) => e.to_string(),
        }
    };
    // A degree moved between partitions: the sum still matches |E|.
    let err = case("moved", &|s| {
        let mut d = out.clone();
        (d[a], d[b]) = (d[a] + 1, d[b] - 1);
        rewrite(s, "out_degree.bin", &u32_bytes(&d));
    });
    assert!(err.contains("out_degree.bin") || err.contains("fwd.index"), "{err}");
    // A degree changed: the sum no longer matches.
    let err = case("sum", &|s| {
        let mut d = u32s(&std::fs::read(s.join("in_degree.bin")).unwrap());
        d[a] += 1;
        rewrite(s, "in_degree.bin", &u32_bytes(&d));
    });
    assert!(err.contains("in_degree.bin"), "{err}");
    // A block boundary moved by one edge, the two blocks' checksums recomputed: edges land in
    // a block of other partitions.
    let err = case("boundary", &|s| {
        let bytes = std::fs::read(s.join("fwd.index")).unwrap();
        let p = 3usize;
        let nb = p * p;
        let mut off: Vec<u64> = bytes[..(nb + 1) * 8]
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let mut sums = u32s(&bytes[(nb + 1) * 8..]);
        let edges = std::fs::read(s.join("fwd.edges")).unwrap();
        let weights = std::fs::read(s.join("fwd.weights")).unwrap();
        let blk = (1..nb).find(|&x| off[x] > off[x - 1]).unwrap();
        off[blk] -= 1;
        for x in [blk - 1, blk] {
            let (lo, hi) = (off[x] as usize, off[x + 1] as usize);
            sums[x] = crc32fast::hash(&edges[lo * 4..hi * 4]);
            sums[nb + x] = crc32fast::hash(&weights[lo * 8..hi * 8]);
        }
        let mut out: Vec<u8> = off.iter().flat_map(|x| x.to_le_bytes()).collect();
        out.extend(u32_bytes(&sums));
        rewrite(s, "fwd.index", &out);
    });
    assert!(err.contains("fwd.index"), "{err}");
}

#[test]
fn verify_counts_every_vertex_degree_from_the_edges() {
    let dir = tempfile::tempdir().unwrap();
    let store = weighted_store(dir.path());
    // Two vertices of partition 0 swap a unit of degree: every sum still holds.
    let mut d = u32s(&std::fs::read(store.join("out_degree.bin")).unwrap());
    (d[3], d[4]) = (d[3] + 1, d[4] - 1);
    rewrite(&store, "out_degree.bin", &u32_bytes(&d));
    let err = sluice_graph::verify(&store).unwrap_err().to_string();
    assert!(err.contains("out_degree.bin") && err.contains("dense vertex 3"), "{err}");
}

const PR_OPTS: sluice_graph::algo::pagerank::PageRankOptions =
    sluice_graph::algo::pagerank::PageRankOptions { iterations: 5, damping: 0.85, tolerance: None };

#[test]
fn an_open_graph_reads_one_version_of_a_store_replaced_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let a = scaled_store(dir.path(), "a", 1.0);
    let b = scaled_store(dir.path(), "b", 2.0);
    let truth_a = sssp(&open(&a, false).unwrap(), 0).unwrap();
    let truth_b = sssp(&open(&b, false).unwrap(), 0).unwrap();
    assert_ne!(truth_a, truth_b);
    for in_memory in [false, true] {
        let live = dir.path().join("live.grid");
        copy_dir(&a, &live);
        let mut g = Graph::open(&live, pipeline(), Budget::unlimited()).unwrap();
        // Replaced as `import --force` does: the new store built beside, the old renamed
        // aside, the new renamed in, the old deleted.
        let (new, old) = (dir.path().join("live.new"), dir.path().join("live.old"));
        copy_dir(&b, &new);
        std::fs::rename(&live, &old).unwrap();
        std::fs::rename(&new, &live).unwrap();
        std::fs::remove_dir_all(&old).unwrap();
        if in_memory {
            g.load_edges().unwrap();
        }
        let got = sssp(&g, 0).unwrap_or_else(|e| panic!("in_memory={in_memory}: {e}"));
        assert!(got == truth_a, "in_memory={in_memory}: not the version opened");
        drop(g);
        assert!(sssp(&open(&live, in_memory).unwrap(), 0).unwrap() == truth_b);
        std::fs::remove_dir_all(&live).unwrap();
    }
}
