//! Importing edges held in memory (`import_from` with `Input::Arrays`) writes the same store,
//! byte for byte, as importing the same edges written as a `bin` file (u64 ids, f64 weights):
//! every file of the store, `meta.json` and its checksums included. Cases: directed and
//! undirected, weighted, `simple`, ids of every accepted width, sparse 64-bit ids under a budget
//! small enough that the id collection spills sorted runs, several partitions.

use std::io::Write;
use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use sluice_graph::import::{
    BinWeight, EdgeArrays, Format, Ids, ImportOptions, Input, Phase, Progress, Weights, import,
    import_from,
};
use sluice_io::{Budget, PipelineBuilder};

/// Every file of the store directory `dir`, by name, with its bytes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap())
        })
        .collect();
    out.sort();
    out
}

fn write_bin(path: &Path, src: &[u64], dst: &[u64], w: Option<&[f64]>) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..src.len() {
        f.write_all(&src[i].to_le_bytes()).unwrap();
        f.write_all(&dst[i].to_le_bytes()).unwrap();
        if let Some(w) = w {
            f.write_all(&w[i].to_le_bytes()).unwrap();
        }
    }
    f.flush().unwrap();
}

/// `m` edges (self loops and a duplicate among them) between ids `pick(0..n)`.
fn edges(m: usize, n: u64, seed: u64, pick: impl Fn(u64) -> u64) -> (Vec<u64>, Vec<u64>, Vec<f64>) {
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    let (mut s, mut d, mut w) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..m {
        let a = pick(rng.gen_range(0..n));
        let b = if rng.gen_range(0..20) == 0 { a } else { pick(rng.gen_range(0..n)) };
        s.push(a);
        d.push(b);
        w.push(rng.gen_range(0..1000) as f64 / 8.0);
    }
    // An exact duplicate with another weight.
    s.push(s[0]);
    d.push(d[0]);
    w.push(0.5);
    (s, d, w)
}

struct Case<'a> {
    name: &'a str,
    directed: bool,
    simple: bool,
    budget: Budget,
}

/// Imports the arrays and the bin file of the same edges; asserts the stores are equal.
fn same_store(
    dir: &Path,
    case: &Case<'_>,
    arrays: EdgeArrays<'_>,
    s: &[u64],
    d: &[u64],
    w: Option<&[f64]>,
) {
    let pipeline = PipelineBuilder::new().block_size(64 << 10).build().unwrap();
    let bin = dir.join(format!("{}.bin", case.name));
    write_bin(&bin, s, d, w);
    let mut o = ImportOptions::new(Format::Bin);
    o.directed = Some(case.directed);
    o.simple = case.simple;
    o.id_bytes = Some(8);
    o.bin_weight = if w.is_some() { BinWeight::F64 } else { BinWeight::None };
    let from_file = dir.join(format!("{}-file.grid", case.name));
    import(std::slice::from_ref(&bin), &from_file, &o, &pipeline, &case.budget).unwrap();
    std::fs::remove_file(&bin).unwrap();

    let mut o = ImportOptions::new(Format::Snap); // format, id width, bin weight: not used
    o.directed = Some(case.directed);
    o.simple = case.simple;
    let progress = std::sync::Arc::new(Progress::default());
    o.progress = Some(progress.clone());
    let from_arrays = dir.join(format!("{}-arrays.grid", case.name));
    let report =
        import_from(Input::Arrays(arrays), &from_arrays, &o, &pipeline, &case.budget).unwrap();
    sluice_graph::verify(&from_arrays).unwrap();
    let (a, b) = (files(&from_file), files(&from_arrays));
    assert_eq!(
        a.iter().map(|f| &f.0).collect::<Vec<_>>(),
        b.iter().map(|f| &f.0).collect::<Vec<_>>(),
        "{}",
        case.name
    );
    for (x, y) in a.iter().zip(&b) {
        assert!(x.1 == y.1, "{}: {} differs", case.name, x.0);
    }
    // Both passes read every edge once, as bin records.
    let record = if w.is_some() { 24 } else { 16 };
    assert_eq!(progress.bytes(), 2 * record * s.len() as u64, "{}", case.name);
    assert_eq!(progress.phase(), None);
    assert_eq!(report.input_bytes, record * s.len() as u64);
}

#[test]
fn a_store_from_arrays_equals_the_store_from_the_same_edges_as_a_bin_file() {
    let dir = tempfile::tempdir().unwrap();
    let small = |v: u64| v * 3 + 1;
    let (s, d, w) = edges(40_000, 5000, 1, small);
    let unlimited = || Budget::unlimited();
    for (name, directed, simple, weighted) in [
        ("directed", true, false, false),
        ("undirected", false, false, false),
        ("directed-weighted", true, false, true),
        ("undirected-weighted-simple", false, true, true),
    ] {
        let case = Case { name, directed, simple, budget: unlimited() };
        let wv = weighted.then_some(w.as_slice());
        let a = EdgeArrays::new(Ids::U64(&s), Ids::U64(&d), wv.map(Weights::F64)).unwrap();
        same_store(dir.path(), &case, a, &s, &d, wv);
    }
    // Narrower and signed ids read the same (as widened u64); f32 weights as widened f64.
    let s32: Vec<i32> = s.iter().map(|&v| v as i32).collect();
    let d32: Vec<u32> = d.iter().map(|&v| v as u32).collect();
    let w32: Vec<f32> = w.iter().map(|&v| v as f32).collect();
    let w64: Vec<f64> = w32.iter().map(|&v| v as f64).collect();
    let a = EdgeArrays::new(Ids::I32(&s32), Ids::U32(&d32), Some(Weights::F32(&w32))).unwrap();
    let case = Case { name: "narrow", directed: true, simple: false, budget: unlimited() };
    same_store(dir.path(), &case, a, &s, &d, Some(&w64));
    let si: Vec<i64> = s.iter().map(|&v| v as i64).collect();
    let a = EdgeArrays::new(Ids::I64(&si), Ids::U64(&d), None).unwrap();
    let case = Case { name: "i64", directed: false, simple: false, budget: unlimited() };
    same_store(dir.path(), &case, a, &s, &d, None);
}

#[test]
fn sparse_ids_under_a_small_budget_spill_and_still_equal_the_file_import() {
    // Ids spread over 2^45: no bitmap; with 8 MiB of budget left (24 MiB less the 16 the program holds) the id collection (a quarter of
    // what is left) spills sorted runs of 64 Ki ids or more. 100 000 vertices: two partitions.
    let dir = tempfile::tempdir().unwrap();
    let (s, d, _) = edges(300_000, 100_000, 2, |v| (v * 14 + (v % 7)) << 28);
    let case = Case {
        name: "sparse",
        directed: true,
        simple: false,
        budget: Budget::new(24 << 20).unwrap(),
    };
    let a = EdgeArrays::new(Ids::U64(&s), Ids::U64(&d), None).unwrap();
    same_store(dir.path(), &case, a, &s, &d, None);
}

#[test]
fn bad_arrays_are_errors_naming_the_argument_and_index_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = PipelineBuilder::new().build().unwrap();
    let out = dir.path().join("g.grid");
    let o = ImportOptions::new(Format::Bin);
    let mut s: Vec<i64> = (0..200_000).collect();
    let d: Vec<i64> = (1..200_001).collect();
    s[150_001] = -4;
    let a = EdgeArrays::new(Ids::I64(&s), Ids::I64(&d), None).unwrap();
    let err = import_from(Input::Arrays(a), &out, &o, &pipeline, &Budget::unlimited());
    assert_eq!(err.unwrap_err().to_string(), "src: index 150001: vertex id -4 is negative");
    let s: Vec<u64> = (0..1000).collect();
    let mut w = vec![1.0; 1000];
    w[999] = -0.0 - 1.0;
    let a = EdgeArrays::new(Ids::U64(&s), Ids::U64(&s), Some(Weights::F64(&w))).unwrap();
    let err = import_from(Input::Arrays(a), &out, &o, &pipeline, &Budget::unlimited());
    let msg = err.unwrap_err().to_string();
    assert!(msg.starts_with("weight: index 999: weight -1 "), "{msg}");
    let err = EdgeArrays::new(Ids::U64(&s), Ids::U64(&s[1..]), None).unwrap_err();
    assert_eq!(err.to_string(), "dst: length 999 differs from the length of src, 1000");
    let left: Vec<PathBuf> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_cancelled_import_from_arrays_stops_in_its_first_pass_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let pipeline = PipelineBuilder::new().cancel(flag).build().unwrap();
    let s: Vec<u64> = (0..10_000).collect();
    let a = EdgeArrays::new(Ids::U64(&s), Ids::U64(&s), None).unwrap();
    let mut o = ImportOptions::new(Format::Bin);
    let progress = std::sync::Arc::new(Progress::default());
    o.progress = Some(progress.clone());
    let out = dir.path().join("g.grid");
    let err = import_from(Input::Arrays(a), &out, &o, &pipeline, &Budget::unlimited()).unwrap_err();
    assert!(matches!(err, sluice_graph::Error::Pipeline(sluice_io::Error::Cancelled)), "{err}");
    assert_eq!(progress.bytes(), 0);
    assert_eq!(Phase::Blocks.name(), "blocks");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
