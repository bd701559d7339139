//! The bytes an import writes are pinned (issue 10, "One house": the split of `import.rs` is a
//! pure restructuring). Every input path (SNAP plain and gzip, Matrix Market general and
//! symmetric, LDBC `.properties` and `.v`/`.e`, binary with `f32` and `f64` weights, `simple`,
//! a grid with several partitions) is imported and the CRC-32 of its `meta.json` (which holds
//! the length and CRC-32 of every other store file) is compared with the value the code wrote
//! before the split. A changed value means a changed store: bump the format version, or fix it.

use std::io::Write;
use std::path::{Path, PathBuf};

use sluice_graph::import::{BinWeight, Format, ImportOptions, import};
use sluice_graph::kronecker::{self, GenOptions};
use sluice_io::{Budget, PipelineBuilder};

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/datasets");

/// Imports `inputs` and returns the CRC-32 of the store's `meta.json`, after checking every
/// store file against it.
fn meta_crc(inputs: &[PathBuf], opts: &ImportOptions, out: &Path) -> u32 {
    // Small blocks: many chunks per file, so chunk seams are crossed many times.
    let pipeline = PipelineBuilder::new().block_size(64 << 10).build().unwrap();
    import(inputs, out, opts, &pipeline, &Budget::unlimited()).unwrap();
    sluice_graph::verify(out).unwrap();
    crc32fast::hash(&std::fs::read(out.join("meta.json")).unwrap())
}

fn opts(format: Format, directed: Option<bool>) -> ImportOptions {
    let mut o = ImportOptions::new(format);
    o.directed = directed;
    o
}

/// Returns `path` when it exists, else prints why the case is skipped.
fn shared(rel: &str) -> Option<PathBuf> {
    let p = Path::new(SHARED).join(rel);
    if p.is_file() {
        Some(p)
    } else {
        println!("skipping: {} not found", p.display());
        None
    }
}

#[test]
fn import_bytes_are_unchanged_by_the_split() {
    let dir = tempfile::tempdir().unwrap();
    let mut got: Vec<(&str, u32)> = Vec::new();
    let store = |name: &str| dir.path().join(format!("{name}.grid"));

    // SNAP, directed, 4-byte ids; undirected and simple; gzip.
    if let Some(p) = shared("real/ca-GrQc/CA-GrQc.txt") {
        let mut o = opts(Format::Snap, Some(true));
        o.id_bytes = Some(4);
        got.push(("snap-directed", meta_crc(std::slice::from_ref(&p), &o, &store("a"))));
        let mut o = opts(Format::Snap, Some(false));
        o.simple = true;
        got.push(("snap-undirected-simple", meta_crc(&[p], &o, &store("b"))));
    }
    if let Some(p) = shared("real/p2p-Gnutella08/p2p-Gnutella08.edgelist") {
        let gz = dir.path().join("p2p.txt.gz");
        let mut enc = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz).unwrap(),
            flate2::Compression::fast(),
        );
        enc.write_all(&std::fs::read(p).unwrap()).unwrap();
        enc.finish().unwrap();
        got.push(("snap-gz", meta_crc(&[gz], &opts(Format::Snap, Some(true)), &store("c"))));
    }

    // LDBC: weighted directed and undirected `.properties`, and a `.v`/`.e` pair.
    for (name, rel) in [
        ("ldbc-directed", "ldbc/example-directed/example-directed.properties"),
        ("ldbc-undirected", "ldbc/example-undirected/example-undirected.properties"),
        ("ldbc-sssp", "ldbc/test-sssp-directed/test-sssp-directed.properties"),
    ] {
        if let Some(p) = shared(rel) {
            got.push((name, meta_crc(&[p], &opts(Format::Ldbc, None), &store(name))));
        }
    }
    if let (Some(v), Some(e)) = (
        shared("ldbc/test-cdlp-undirected/test-cdlp-undirected.v"),
        shared("ldbc/test-cdlp-undirected/test-cdlp-undirected.e"),
    ) {
        let o = opts(Format::Ldbc, Some(false));
        got.push(("ldbc-pair", meta_crc(&[v, e], &o, &store("d"))));
    }

    // Matrix Market: general real (duplicates and a self loop, simple), symmetric pattern.
    let mtx = dir.path().join("g.mtx");
    std::fs::write(
        &mtx,
        "%%MatrixMarket matrix coordinate real general\n% c\n5 4 7\n1 2 0.5\n2 3 1.5\n\
         3 3 2\n1 2 0.25\n4 1 1e3\n5 4 0\n2 1 7\n",
    )
    .unwrap();
    let mut o = opts(Format::Mtx, Some(true));
    o.simple = true;
    got.push(("mtx-general", meta_crc(&[mtx], &o, &store("e"))));
    let mtx = dir.path().join("s.mtx");
    std::fs::write(
        &mtx,
        "%%MatrixMarket matrix coordinate pattern symmetric\r\n6 6 5\r\n2 1\r\n3 1\r\n4 4\r\n\
         6 2\r\n6 5\r\n",
    )
    .unwrap();
    got.push(("mtx-symmetric", meta_crc(&[mtx], &opts(Format::Mtx, None), &store("f"))));

    // Binary: a Kronecker graph with several partitions and f32 weights (plain and simple);
    // 8-byte ids with f64 weights, sparse ids.
    let kron = dir.path().join("k.bin");
    let kron_opts = GenOptions { scale: 17, edge_factor: 4, seed: 7, weights: true };
    assert_eq!(kronecker::generate(&kron_opts, &kron, None).unwrap(), 4 << 17);
    got.push(("kronecker-file", crc32fast::hash(&std::fs::read(&kron).unwrap())));
    let mut o = opts(Format::Bin, None);
    o.bin_weight = BinWeight::F32;
    got.push(("bin-f32", meta_crc(std::slice::from_ref(&kron), &o, &store("g"))));
    o.simple = true;
    o.directed = Some(false);
    got.push(("bin-f32-undirected-simple", meta_crc(&[kron], &o, &store("h"))));
    let wide = dir.path().join("w.bin");
    let mut rec = Vec::new();
    for (s, d, w) in [(1u64 << 40, 3u64, 0.5f64), (3, 1 << 40, 2.0), (9, 9, 1.0), (3, 9, 0.0)] {
        rec.extend_from_slice(&s.to_le_bytes());
        rec.extend_from_slice(&d.to_le_bytes());
        rec.extend_from_slice(&w.to_le_bytes());
    }
    std::fs::write(&wide, rec).unwrap();
    let mut o = opts(Format::Bin, Some(true));
    o.id_bytes = Some(8);
    o.bin_weight = BinWeight::F64;
    got.push(("bin-u64-f64", meta_crc(&[wide], &o, &store("i"))));

    // Written by the code before the split (commit 5ac80ef), whatever the thread count;
    // weighted stores as since their indexes carry the weights' block checksums (issue 17,
    // defect 2: only the weighted entries changed then).
    let want: &[(&str, u32)] = &[
        ("snap-directed", 0x3abc16f5),
        ("snap-undirected-simple", 0xef114342),
        ("snap-gz", 0x5e7cf072),
        ("ldbc-directed", 0x1e3cf07c),
        ("ldbc-undirected", 0x2c386b77),
        ("ldbc-sssp", 0x6efb7455),
        ("ldbc-pair", 0x8b1ac245),
        ("mtx-general", 0x5c6d729f),
        ("mtx-symmetric", 0x084797a3),
        ("kronecker-file", 0x5fae7b3b),
        ("bin-f32", 0x7054d9d1),
        ("bin-f32-undirected-simple", 0xa370f30f),
        ("bin-u64-f64", 0x7d1ae6a4),
    ];
    for (name, crc) in &got {
        let (_, w) = want.iter().find(|(n, _)| n == name).unwrap();
        assert_eq!(crc, w, "{name}: the store's bytes changed ({crc:#010x})");
    }
}

/// Library errors speak the library's language (issue 10, item 5): each refusal is its own
/// variant carrying the values, and no message names a command-line flag.
#[test]
fn import_and_kronecker_refusals_carry_their_values_and_name_no_flag() {
    use sluice_graph::Error;
    let dir = tempfile::tempdir().unwrap();
    let pipeline = PipelineBuilder::new().build().unwrap();
    let run = |inputs: &[PathBuf], o: &ImportOptions, out: &Path| {
        import(inputs, out, o, &pipeline, &Budget::unlimited()).unwrap_err()
    };
    let snap = dir.path().join("g.txt");
    std::fs::write(&snap, "1 2\n").unwrap();
    let out = dir.path().join("g.grid");
    let mut errors = Vec::new();

    let e = run(&[], &opts(Format::Snap, Some(true)), &out);
    assert!(matches!(e, Error::NoInput), "{e:?}");
    errors.push(e);
    let e = run(std::slice::from_ref(&snap), &opts(Format::Snap, None), &out);
    assert!(matches!(&e, Error::NoDirection { path, .. } if *path == snap), "{e:?}");
    errors.push(e);
    let mut o = opts(Format::Snap, Some(true));
    o.id_bytes = Some(2);
    let e = run(std::slice::from_ref(&snap), &o, &out);
    assert!(matches!(e, Error::BadIdBytes { bytes: 2 }), "{e:?}");
    errors.push(e);
    let e = run(&[snap.clone(), snap.clone()], &opts(Format::Mtx, Some(true)), &out);
    assert!(matches!(e, Error::InputCount { given: 2, .. }), "{e:?}");
    errors.push(e);
    let e = run(&[snap.clone(), snap.clone(), snap.clone()], &opts(Format::Ldbc, None), &out);
    assert!(matches!(e, Error::InputCount { given: 3, .. }), "{e:?}");
    errors.push(e);
    let e = run(&[snap.clone(), snap.clone()], &opts(Format::Ldbc, None), &out);
    assert!(matches!(e, Error::NoDirection { .. }), "{e:?}");
    errors.push(e);
    let mtx = dir.path().join("g.mtx");
    std::fs::write(&mtx, "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2\n").unwrap();
    let e = run(std::slice::from_ref(&mtx), &opts(Format::Mtx, None), &out);
    assert!(matches!(&e, Error::NoDirection { path, .. } if *path == mtx), "{e:?}");
    errors.push(e);

    // An existing target: refused without `force`; a directory that is not a store, always.
    let o = opts(Format::Snap, Some(true));
    import(std::slice::from_ref(&snap), &out, &o, &pipeline, &Budget::unlimited()).unwrap();
    let e = run(std::slice::from_ref(&snap), &o, &out);
    assert!(matches!(&e, Error::TargetExists { path } if *path == out), "{e:?}");
    errors.push(e);
    let mut forced = o.clone();
    forced.force = true;
    import(std::slice::from_ref(&snap), &out, &forced, &pipeline, &Budget::unlimited()).unwrap();
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("keep.txt"), "mine").unwrap();
    let e = run(std::slice::from_ref(&snap), &forced, &other);
    assert!(matches!(&e, Error::TargetNotAStore { path } if *path == other), "{e:?}");
    assert!(other.join("keep.txt").is_file());
    errors.push(e);

    let k = dir.path().join("k.bin");
    for (scale, edge_factor) in [(0, 16), (33, 16)] {
        let e = kronecker::generate(
            &GenOptions { scale, edge_factor, seed: 1, weights: false },
            &k,
            None,
        )
        .unwrap_err();
        assert!(matches!(e, Error::BadScale { scale: s } if s == scale), "{e:?}");
        errors.push(e);
    }
    for (scale, edge_factor) in [(4, 0), (32, 1 << 32)] {
        let e = kronecker::generate(
            &GenOptions { scale, edge_factor, seed: 1, weights: false },
            &k,
            None,
        )
        .unwrap_err();
        assert!(
            matches!(e, Error::BadEdgeFactor { edge_factor: f, .. } if f == edge_factor),
            "{e:?}"
        );
        errors.push(e);
    }
    assert!(!k.exists());

    for e in &errors {
        let text = e.to_string();
        assert!(!text.contains("--"), "a flag in {text:?}");
        println!("{text}");
    }
}
