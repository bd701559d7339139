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

/// Imports a seeded weighted directed graph; returns the store and the smallest original id.
fn weighted_store(dir: &Path) -> PathBuf {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let mut text = String::new();
    for v in 0..N - 1 {
        // A path through every vertex (so every vertex is reached), plus random chords.
        text.push_str(&format!("{v} {} {}\n", v + 1, rng.gen_range(1..100) as f64 / 8.0));
    }
    for _ in 0..60_000 {
        let (s, d) = (rng.gen_range(0..N), rng.gen_range(0..N));
        text.push_str(&format!("{s} {d} {}\n", rng.gen_range(1..100) as f64 / 8.0));
    }
    let input = dir.join("w.txt");
    std::fs::write(&input, text).unwrap();
    let store = dir.join("w.grid");
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
