//! k-means against a naive reference: the whole file in memory, Lloyd's algorithm with plain
//! loops (direct squared distances for the argmin, a sort for the relocation). It shares no
//! code with the kernel.

use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng, rngs::StdRng};
use sluice_io::{Budget, PipelineBuilder};

use super::*;
use crate::stats::tests::pipeline_on;
use crate::{Dtype, Endian, npy};

/// Lloyd's algorithm, `iters` update passes then the final assignment: (centres, labels).
fn naive(x: &[f64], d: usize, init: &[f64], iters: usize) -> (Vec<f64>, Vec<usize>) {
    let (n, k) = (x.len() / d, init.len() / d);
    let sq = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(p, q)| (p - q) * (p - q)).sum::<f64>();
    let assign = |c: &[f64]| -> Vec<usize> {
        (0..n)
            .map(|i| {
                let r = &x[i * d..(i + 1) * d];
                let mut best = 0;
                for j in 1..k {
                    if sq(r, &c[j * d..(j + 1) * d]) < sq(r, &c[best * d..(best + 1) * d]) {
                        best = j;
                    }
                }
                best
            })
            .collect()
    };
    let mut c = init.to_vec();
    for _ in 0..iters {
        let labels = assign(&c);
        let mut sums = vec![0.0; k * d];
        let mut counts = vec![0usize; k];
        for (i, &j) in labels.iter().enumerate() {
            counts[j] += 1;
            for f in 0..d {
                sums[j * d + f] += x[i * d + f];
            }
        }
        let dist: Vec<f64> =
            (0..n).map(|i| sq(&x[i * d..(i + 1) * d], &c[labels[i] * d..][..d])).collect();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| dist[b].total_cmp(&dist[a]).then(a.cmp(&b)));
        let empty: Vec<usize> = (0..k).filter(|&j| counts[j] == 0).collect();
        if dist[order[0]] > 0.0 {
            for (&e, &i) in empty.iter().zip(&order) {
                for f in 0..d {
                    sums[labels[i] * d + f] -= x[i * d + f];
                    sums[e * d + f] = x[i * d + f];
                }
                counts[labels[i]] -= 1;
                counts[e] = 1;
            }
        }
        for j in 0..k {
            for f in 0..d {
                c[j * d + f] = if counts[j] > 0 { sums[j * d + f] / counts[j] as f64 } else { 0.0 };
            }
        }
    }
    let labels = assign(&c);
    (c, labels)
}

/// `n × d` records around `k` seeded centres, and `k` initial centres drawn from them.
fn blobs(rng: &mut StdRng, n: usize, d: usize, k: usize) -> (Vec<f64>, Vec<f64>) {
    let centres: Vec<f64> = (0..k * d).map(|_| rng.gen_range(-10.0..10.0)).collect();
    let x: Vec<f64> = (0..n)
        .flat_map(|_| {
            let j = rng.gen_range(0..k);
            (0..d).map(|f| centres[j * d + f] + rng.gen_range(-4.0..4.0)).collect::<Vec<_>>()
        })
        .collect();
    let init = (0..k).flat_map(|_| x[rng.gen_range(0..n) * d..][..d].to_vec()).collect();
    (x, init)
}

fn write_npy(path: &Path, x: &[f64], d: usize, dtype: Dtype) {
    let mut bytes = npy::write_header(dtype, &[(x.len() / d) as u64, d as u64], false);
    for &v in x {
        match (dtype.scalar, dtype.endian) {
            (Scalar::F64, Endian::Little) => bytes.extend_from_slice(&v.to_le_bytes()),
            (Scalar::F64, Endian::Big) => bytes.extend_from_slice(&v.to_be_bytes()),
            (_, Endian::Little) => bytes.extend_from_slice(&(v as f32).to_le_bytes()),
            (_, Endian::Big) => bytes.extend_from_slice(&(v as f32).to_be_bytes()),
        }
    }
    std::fs::write(path, bytes).unwrap();
}

fn config(k: usize, init: &Path, iters: usize, labels: Option<PathBuf>) -> KmeansConfig {
    KmeansConfig {
        k,
        init: Init::File(init.to_path_buf()),
        threshold: 0.0,
        max_iter: iters,
        labels,
        ..KmeansConfig::default()
    }
}

fn read_labels(path: &Path) -> Vec<usize> {
    let h = npy::read_header(path).unwrap();
    let bytes = std::fs::read(path).unwrap();
    bytes[h.data_offset as usize..]
        .chunks_exact(4)
        .map(|b| i32::from_le_bytes(b.try_into().unwrap()) as usize)
        .collect()
}

#[test]
fn lloyd_matches_the_naive_reference_in_both_byte_orders() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    for (n, d, k) in [(3000, 3, 5), (1000, 7, 12), (517, 1, 2)] {
        let (x, init) = blobs(&mut rng, n, d, k);
        let init_path = dir.path().join("init.npy");
        write_npy(&init_path, &init, d, Dtype::new(Scalar::F64, Endian::Little));
        let (want_c, want_l) = naive(&x, d, &init, 6);
        for endian in [Endian::Little, Endian::Big] {
            let path = dir.path().join("x.npy");
            write_npy(&path, &x, d, Dtype::new(Scalar::F64, endian));
            let labels = dir.path().join("l.npy");
            let cfg = config(k, &init_path, 6, Some(labels.clone()));
            let pipeline = pipeline_on(4096, 0);
            let r = kmeans(&path, &cfg, &pipeline, &Budget::unlimited()).unwrap();
            for (a, b) in r.centres.iter().flatten().zip(&want_c) {
                assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} vs {b}");
            }
            assert_eq!(read_labels(&labels), want_l);
            let counts: Vec<u64> =
                (0..k).map(|j| want_l.iter().filter(|&&l| l == j).count() as u64).collect();
            assert_eq!(r.counts, counts);
        }
    }
}

#[test]
fn rule4_empty_clusters_take_the_farthest_records() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(8);
    let (x, mut init) = blobs(&mut rng, 2000, 2, 4);
    // Two centres far from every record: both clusters are empty after the first assignment.
    init[4..8].copy_from_slice(&[1e6, 1e6, -1e6, 1e6]);
    let (path, init_path) = (dir.path().join("x.npy"), dir.path().join("i.npy"));
    write_npy(&path, &x, 2, Dtype::new(Scalar::F64, Endian::Little));
    write_npy(&init_path, &init, 2, Dtype::new(Scalar::F64, Endian::Little));
    // Under passes of moves too (`moves.rs`): the relocated records are relabelled in the
    // bounds, so the clusters carried forward stay those of the labels.
    for (below, iters) in [(-1.0, 3), (1.0, 12)] {
        let (want, want_labels) = naive(&x, 2, &init, iters);
        let labels = dir.path().join("l.npy");
        let cfg = config(4, &init_path, iters, Some(labels.clone()));
        moves::BELOW.with(|o| o.set(Some(below)));
        let r = kmeans(&path, &cfg, &pipeline_on(8192, 1), &Budget::unlimited());
        moves::BELOW.with(|o| o.set(None));
        let r = r.unwrap();
        assert_eq!(r.history[0].relocated, 2);
        assert_eq!(r.history.iter().any(|h| h.moves), below > 0.0);
        assert_eq!(read_labels(&labels), want_labels, "passes of moves below {below}");
        for (a, b) in r.centres.iter().flatten().zip(&want) {
            assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} vs {b}");
        }
    }
}

#[test]
fn rule7_same_bits_whatever_the_workers_and_engine() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(9);
    let (x, init) = blobs(&mut rng, 20_000, 5, 8);
    let (path, init_path) = (dir.path().join("x.npy"), dir.path().join("i.npy"));
    write_npy(&path, &x, 5, Dtype::new(Scalar::F64, Endian::Little));
    write_npy(&init_path, &init, 5, Dtype::new(Scalar::F64, Endian::Little));
    let cfg = config(8, &init_path, 5, None);
    let bits = |r: &KmeansReport| -> Vec<u64> {
        let mut v: Vec<u64> = r.centres.iter().flatten().map(|c| c.to_bits()).collect();
        v.extend(r.history.iter().map(|h| h.inertia.to_bits()));
        v
    };
    let run = |b: PipelineBuilder| kmeans(&path, &cfg, &b.build().unwrap(), &Budget::unlimited());
    let first = bits(&run(PipelineBuilder::new().block_size(16384).workers(1)).unwrap());
    for workers in [2, 4] {
        let r = run(PipelineBuilder::new().block_size(16384).workers(workers)).unwrap();
        assert_eq!(bits(&r), first, "{workers} workers");
    }
    for way in 0..5 {
        let r = kmeans(&path, &cfg, &pipeline_on(16384, way), &Budget::unlimited()).unwrap();
        assert_eq!(bits(&r), first, "pipeline path {way}");
    }
    // Another block size groups the f64 sums differently: equal to rounding, same labels.
    let other = run(PipelineBuilder::new().block_size(4096).workers(2)).unwrap();
    assert_eq!(other.counts, run(PipelineBuilder::new().block_size(16384)).unwrap().counts);
    for (a, b) in bits(&other).iter().zip(&first) {
        let (a, b) = (f64::from_bits(*a), f64::from_bits(*b));
        assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} vs {b}");
    }
}

#[test]
fn rule6_threshold_is_relative_to_the_mean_feature_variance() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(10);
    let (mut x, init) = blobs(&mut rng, 5000, 3, 4);
    // A large offset: the textbook Σx² − nμ² would lose digits here.
    x.iter_mut().for_each(|v| *v += 1e6);
    let init: Vec<f64> = init.iter().map(|v| v + 1e6).collect();
    let (path, init_path) = (dir.path().join("x.npy"), dir.path().join("i.npy"));
    write_npy(&path, &x, 3, Dtype::new(Scalar::F64, Endian::Little));
    write_npy(&init_path, &init, 3, Dtype::new(Scalar::F64, Endian::Little));
    let mut cfg = config(4, &init_path, 100, None);
    cfg.threshold = 1e-3;
    let r = kmeans(&path, &cfg, &pipeline_on(8192, 3), &Budget::unlimited()).unwrap();
    let n = 5000.0;
    let mut var = 0.0;
    for f in 0..3 {
        let mean = (0..5000).map(|i| x[i * 3 + f]).sum::<f64>() / n;
        var += (0..5000).map(|i| (x[i * 3 + f] - mean).powi(2)).sum::<f64>() / n / 3.0;
    }
    assert!((r.tolerance - 1e-3 * var).abs() <= 1e-9 * var, "{} vs {}", r.tolerance, 1e-3 * var);
    let last = r.history.last().unwrap();
    assert!(r.stop != Stop::MaxIter && (last.shift <= r.tolerance || r.stop == Stop::Unchanged));
}

#[test]
fn kmeans_plus_plus_is_seeded_and_spreads_the_centres() {
    let dir = tempfile::tempdir().unwrap();
    // Four tight, far-apart groups: k-means++ puts one centre in each.
    let mut x = Vec::new();
    let mut rng = StdRng::seed_from_u64(11);
    for g in 0..4 {
        for _ in 0..250 {
            x.extend([g as f64 * 100.0 + rng.gen_range(0.0..1.0), rng.gen_range(0.0..1.0)]);
        }
    }
    let path = dir.path().join("x.npy");
    write_npy(&path, &x, 2, Dtype::new(Scalar::F64, Endian::Little));
    let cfg = KmeansConfig { k: 4, max_iter: 1, seed: 5, ..KmeansConfig::default() };
    let pipeline = PipelineBuilder::new().build().unwrap();
    let a = kmeans(&path, &cfg, &pipeline, &Budget::unlimited()).unwrap();
    let b = kmeans(&path, &cfg, &pipeline, &Budget::unlimited()).unwrap();
    assert_eq!(a.centres, b.centres);
    let mut groups: Vec<i64> = a.centres.iter().map(|c| (c[0] / 100.0).round() as i64).collect();
    groups.sort();
    assert_eq!(groups, [0, 1, 2, 3]);
    assert_eq!(a.counts, [250; 4]);
}

#[test]
fn rule1_bad_inputs_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = PipelineBuilder::new().build().unwrap();
    let budget = Budget::unlimited();
    let f64le = Dtype::new(Scalar::F64, Endian::Little);
    let mut x: Vec<f64> = (0..40).map(f64::from).collect();
    let path = dir.path().join("x.npy");
    write_npy(&path, &x, 4, f64le);
    let cfg = KmeansConfig { k: 11, ..KmeansConfig::default() };
    let err = kmeans(&path, &cfg, &pipeline, &budget).unwrap_err();
    assert!(matches!(err, KmeansError::TooFewRecords { n: 10, k: 11, .. }), "{err}");
    x[4 * 7 + 2] = f64::NAN;
    write_npy(&path, &x, 4, f64le);
    let header = npy::write_header(f64le, &[10, 4], false).len() as u64;
    let cfg = KmeansConfig { k: 2, ..KmeansConfig::default() };
    let err = kmeans(&path, &cfg, &pipeline, &budget).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, KmeansError::NonFinite { record: 7, offset, .. } if offset == header + 7 * 32),
        "{msg}"
    );
    assert!(msg.contains("x.npy"), "{msg}");
    let raw = dir.path().join("x.raw");
    std::fs::write(&raw, [0u8; 8 * 9]).unwrap();
    let cfg = KmeansConfig { k: 2, dtype: Some(Scalar::F64), dims: Some(4), ..cfg };
    let err = kmeans(&raw, &cfg, &pipeline, &budget).unwrap_err();
    assert!(err.to_string().contains("not a whole number of 4-value records"), "{err}");
    let ints = dir.path().join("i.npy");
    let mut bytes = npy::write_header(Dtype::new(Scalar::I32, Endian::Little), &[4, 2], false);
    bytes.extend_from_slice(&[0u8; 32]);
    std::fs::write(&ints, bytes).unwrap();
    let err = kmeans(&ints, &KmeansConfig { k: 2, ..KmeansConfig::default() }, &pipeline, &budget)
        .unwrap_err();
    assert!(err.to_string().contains("f32 or f64"), "{err}");
}

#[test]
fn hints_set_the_same_fields_as_flags() {
    let cfg = KmeansConfig::from_hints(&[
        ("k", "20"),
        ("dims", "10"),
        ("dtype", "f32"),
        ("init", "c.npy"),
        ("threshold", "0"),
        ("max-iter", "7"),
        ("seed", "3"),
    ])
    .unwrap();
    assert_eq!((cfg.k, cfg.dims, cfg.dtype), (20, Some(10), Some(Scalar::F32)));
    assert_eq!(
        (cfg.init, cfg.threshold, cfg.max_iter, cfg.seed),
        (Init::File("c.npy".into()), 0.0, 7, 3)
    );
    assert!(KmeansConfig::from_hints(&[("dtype", "i32")]).is_err());
    assert!(KmeansConfig::from_hints(&[("threshold", "-1")]).is_err());
    assert!(KmeansConfig::from_hints(&[("clusters", "3")]).is_err());
}

/// Records that tie or nearly tie: blobs, a small integer grid (exact ties with the integer
/// and half-integer centres of the first passes, duplicates), points a few ulps either side
/// of midpoints between centres, and two initial centres 1e-9 apart.
fn near_ties(rng: &mut StdRng, d: usize, k: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut x, mut init) = blobs(rng, 6000, d, k);
    for _ in 0..3000 {
        x.extend((0..d).map(|_| f64::from(rng.gen_range(0..4u8))));
    }
    for _ in 0..3000 {
        let (a, b) = (rng.gen_range(0..k), rng.gen_range(0..k));
        let nudge = rng.gen_range(-3i64..=3);
        x.extend((0..d).map(|f| {
            let mid = 0.5 * (init[a * d + f] + init[b * d + f]);
            f64::from_bits((mid.to_bits() as i64 + nudge) as u64)
        }));
    }
    for f in 0..d {
        init[f] = f64::from(rng.gen_range(0..4u8));
        init[d + f] = init[f] + 1e-9;
        init[2 * d + f] = 0.5 + f64::from(rng.gen_range(0..3u8));
    }
    (x, init)
}

#[test]
fn bounds_and_memory_give_the_labels_and_bits_of_plain_streaming_lloyd() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(13);
    let (d, k) = (3, 9);
    let (x, init) = near_ties(&mut rng, d, k);
    let n = x.len() / d;
    // Each instruction set against its own plain Lloyd (fused multiply-adds change the bits).
    for (scalar, baseline) in
        [Scalar::F64, Scalar::F32].into_iter().flat_map(|s| [(s, false), (s, true)])
    {
        let dtype = Dtype::new(scalar, Endian::Little);
        let (path, init_path) = (dir.path().join("x.npy"), dir.path().join("i.npy"));
        write_npy(&path, &x, d, dtype);
        write_npy(&init_path, &init, d, dtype);
        // `lean`: the lean loop where the CPU has AVX2 (else the windows or the one-record
        // loop, by `one_by_one`).
        // Passes of moves off: they carry the sums, so the bits differ (their own test below).
        let run = |off: bool, one_by_one: Option<bool>, lean: bool, dense: bool, labels: &str| {
            let cfg = config(k, &init_path, 12, Some(dir.path().join(labels)));
            let pipeline = PipelineBuilder::new().block_size(8192).workers(2).build().unwrap();
            moves::BELOW.with(|o| o.set(Some(-1.0)));
            bounds::OFF.with(|o| o.set(off));
            bounds::ONE_BY_ONE.with(|o| o.set(one_by_one));
            bounds::DENSE.with(|o| o.set(Some(dense)));
            resident::OFF.with(|o| o.set(off));
            kernel::LEAN_OFF.with(|o| o.set(!lean));
            simd::BASELINE.with(|o| o.set(baseline));
            let r = kmeans(&path, &cfg, &pipeline, &Budget::unlimited()).unwrap();
            moves::BELOW.with(|o| o.set(None));
            bounds::OFF.with(|o| o.set(false));
            bounds::ONE_BY_ONE.with(|o| o.set(None));
            bounds::DENSE.with(|o| o.set(None));
            resident::OFF.with(|o| o.set(false));
            kernel::LEAN_OFF.with(|o| o.set(false));
            simd::BASELINE.with(|o| o.set(false));
            (r, read_labels(&dir.path().join(labels)))
        };
        // Plain Lloyd streaming every pass, against bounds with the data kept in memory: the
        // records that fail their bounds assigned in windows of tiles, one by one, or each
        // block as its last pass suggests, or by the lean loop (tiles filled as the records
        // are tested); and the lean loop without bounds.
        let (full, full_labels) = run(true, None, false, false, "full.npy");
        assert!(full.history.iter().all(|h| h.assigned == n as u64), "{scalar:?}");
        let passes = full.history.len() as u64 + 1;
        assert_eq!(full.run.bytes_read, passes * x.len() as u64 * dtype.itemsize() as u64);
        let bits = |r: &KmeansReport| -> Vec<u64> {
            let mut v: Vec<u64> = r.centres.iter().flatten().map(|c| c.to_bits()).collect();
            v.extend(r.history.iter().map(|h| h.inertia.to_bits()));
            v.push(r.inertia.to_bits());
            v
        };
        let (lean_full, lean_full_labels) = run(true, None, true, false, "lean.npy");
        assert_eq!(lean_full_labels, full_labels, "{scalar:?}, lean without bounds");
        assert_eq!(bits(&lean_full), bits(&full), "{scalar:?}, lean without bounds");
        // The lean loop's dense blocks (every record assigned in full, the test applied after)
        // must spare the same records as the test itself: the same count in every pass.
        let mut tested = None;
        for (one_by_one, lean, dense) in [
            (Some(false), false, false),
            (Some(true), false, false),
            (None, false, false),
            (Some(false), true, false),
            (Some(true), true, false),
            (None, true, false),
            (Some(false), true, true),
        ] {
            let (fast, fast_labels) = run(false, one_by_one, lean, dense, "fast.npy");
            let what = format!(
                "{scalar:?} baseline {baseline}, one by one {one_by_one:?}, lean {lean}, \
                 dense {dense}"
            );
            let assigned: Vec<u64> = fast.history.iter().map(|h| h.assigned).collect();
            if one_by_one == Some(false) && lean {
                assert_eq!(*tested.get_or_insert_with(|| assigned.clone()), assigned, "{what}");
            }
            assert_eq!(fast.run.bytes_read, x.len() as u64 * dtype.itemsize() as u64, "one read");
            // The bounds must have spared most records once the centres settle, or this test
            // tests nothing.
            let spared = fast.history.last().unwrap().assigned;
            assert!(spared < n as u64 / 2, "{what}: {spared} of {n} assigned in full");
            assert_eq!(fast_labels, full_labels, "{what}");
            assert_eq!(fast.counts, full.counts, "{what}");
            assert_eq!(bits(&fast), bits(&full), "{what}");
        }
    }
}

/// The hand-written AVX2 tile, and the AVX-512 one where the CPU has it, against the portable
/// code with fused multiply-adds (`mul_add`, the same roundings): the same labels and second
/// smallest expansions, bit for bit, on random tiles with a duplicated centre (exact ties).
#[test]
fn the_avx2_tile_gives_the_portable_bits() {
    let Some(proof) = simd::proof() else {
        eprintln!("no AVX2 + FMA here: nothing to compare");
        return;
    };
    if simd::wide().is_none() {
        eprintln!("no AVX-512 here: the AVX2 tile alone");
    }
    for narrow in [true, false] {
        simd::NARROW.with(|n| n.set(narrow));
        tiles_match(proof);
    }
    simd::NARROW.with(|n| n.set(false));
}

/// [`the_avx2_tile_gives_the_portable_bits`] with the tile `simd::nearest_avx2` chooses.
fn tiles_match(proof: simd::Avx2Fma) {
    let mut rng = StdRng::seed_from_u64(21);
    for (d, k) in [(1, 1), (3, 2), (10, 20), (7, 13), (5, 33), (2, 4), (4, 6)] {
        let mut m2c: Vec<f64> = (0..k * d).map(|_| rng.gen_range(-8.0..8.0)).collect();
        if k > 2 {
            let row: Vec<f64> = m2c[..d].to_vec();
            m2c[2 * d..3 * d].copy_from_slice(&row);
        }
        let norms: Vec<f64> = m2c.chunks(d).map(|r| r.iter().map(|c| c * c / 4.0).sum()).collect();
        let xt: Vec<[f64; 16]> =
            (0..d).map(|_| std::array::from_fn(|_| rng.gen_range(-9.0..9.0))).collect();
        let (mut l1, mut s1, mut l2, mut s2) = ([0; 16], [0.0; 16], [0; 16], [0.0; 16]);
        assign::nearest::<f64, 16, true, true>(&xt, &m2c, &norms, &mut l1, &mut s1);
        assert!(simd::nearest_avx2::<f64, 16, true>(proof, &xt, &m2c, &norms, &mut l2, &mut s2));
        assert_eq!(l1, l2, "f64 d={d} k={k}");
        assert_eq!(s1.map(f64::to_bits), s2.map(f64::to_bits), "f64 d={d} k={k}");
        one_by_one_matches::<f64, 16>(proof, &xt, &l1, &s1, &m2c, &norms);
        let m2c: Vec<f32> = m2c.iter().map(|&c| c as f32).collect();
        let norms: Vec<f32> = norms.iter().map(|&c| c as f32).collect();
        let xt: Vec<[f32; 32]> =
            (0..d).map(|_| std::array::from_fn(|_| rng.gen_range(-9.0..9.0))).collect();
        let (mut l1, mut s1, mut l2, mut s2) = ([0; 32], [0.0; 32], [0; 32], [0.0; 32]);
        assign::nearest::<f32, 32, true, true>(&xt, &m2c, &norms, &mut l1, &mut s1);
        assert!(simd::nearest_avx2::<f32, 32, true>(proof, &xt, &m2c, &norms, &mut l2, &mut s2));
        assert_eq!(l1, l2, "f32 d={d} k={k}");
        assert_eq!(s1.map(f32::to_bits), s2.map(f32::to_bits), "f32 d={d} k={k}");
        one_by_one_matches::<f32, 32>(proof, &xt, &l1, &s1, &m2c, &norms);
    }
}

/// Each record of a tile, assigned alone (`assign::nearest_one`, portable and AVX2), gets the
/// tile's label and second smallest expansion, bit for bit.
fn one_by_one_matches<T: kernel::Float + std::fmt::Debug, const P: usize>(
    proof: simd::Avx2Fma,
    xt: &[[T; P]],
    labels: &[u32; P],
    second: &[T; P],
    m2c: &[T],
    norms: &[T],
) {
    let d = xt.len();
    // The centres whose `−2c` and `‖c‖²` the tile used, as `Prepared` builds them.
    let c64: Vec<f64> = m2c.iter().map(|&m| -0.5 * m.to_f64()).collect();
    let mut prep = kernel::Prepared::<T>::new(&c64, d);
    assert!(prep.m2c.iter().zip(m2c).all(|(a, b)| a.to_f64() == b.to_f64()));
    // The norms as given (the tile's), padded as `Prepared` pads them.
    prep.norms = norms.to_vec();
    prep.npad[..norms.len()].copy_from_slice(norms);
    let mut scratch = vec![T::ZERO; d];
    for l in 0..P {
        let bytes: Vec<u8> = xt
            .iter()
            .flat_map(|row| {
                let v = row[l].to_f64();
                if T::SIZE == 8 {
                    v.to_le_bytes().to_vec()
                } else {
                    (v as f32).to_le_bytes().to_vec()
                }
            })
            .collect();
        for avx2 in [None, Some(proof)] {
            let (j, s) = assign::nearest_one::<T, false, true>(avx2, &bytes, &prep, &mut scratch);
            assert_eq!(j, labels[l], "{} d={d} lane {l} avx2 {}", T::SIZE, avx2.is_some());
            assert_eq!(
                s.to_f64().to_bits(),
                second[l].to_f64().to_bits(),
                "{} d={d} lane {l}",
                T::SIZE
            );
        }
    }
}

/// The transposing tile fill puts every value of every record where the one-value fill does,
/// for record lengths below, at and across the transposed blocks (8 values of f32, 4 of f64)
/// and runs of records that are not whole blocks, and leaves the lanes past the last record.
#[test]
fn the_transposing_tile_fill_puts_each_value_where_the_one_value_fill_does() {
    let Some(proof) = simd::proof() else {
        eprintln!("no AVX2 + FMA here: nothing to compare");
        return;
    };
    fn check<T: kernel::Float + std::fmt::Debug, const P: usize>(
        proof: simd::Avx2Fma,
        d: usize,
        n: usize,
        bytes: &[u8],
    ) {
        let recs = &bytes[..n * d * T::SIZE];
        let mut want = vec![[T::INFINITY; P]; d];
        for (i, r) in recs.chunks_exact(d * T::SIZE).enumerate() {
            for (x, b) in want.iter_mut().zip(r.chunks_exact(T::SIZE)) {
                x[i] = T::load::<false>(b);
            }
        }
        let mut got = vec![[T::INFINITY; P]; d];
        simd::fill_tile::<T, P>(proof, recs, &mut got);
        let bits = |t: &[[T; P]]| -> Vec<u64> {
            t.iter().flatten().map(|v| v.to_f64().to_bits()).collect()
        };
        assert_eq!(bits(&got), bits(&want), "{} bytes a value, d={d}, n={n}", T::SIZE);
    }
    let mut rng = StdRng::seed_from_u64(24);
    for d in [1, 3, 4, 7, 8, 10, 12, 16, 17] {
        let values: Vec<f64> = (0..32 * d).map(|_| rng.gen_range(-1e3..1e3)).collect();
        let b64: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let b32: Vec<u8> = values.iter().flat_map(|&v| (v as f32).to_le_bytes()).collect();
        for n in [0, 1, 3, 4, 5, 7, 8, 9, 15, 16] {
            check::<f64, 16>(proof, d, n, &b64);
        }
        for n in [0, 1, 7, 8, 9, 16, 25, 31, 32] {
            check::<f32, 32>(proof, d, n, &b32);
        }
    }
}

/// The AVX2 record figures (distance, norm, sums) against the portable ones, bit for bit.
#[test]
fn the_avx2_row_gives_the_portable_bits() {
    let Some(proof) = simd::proof() else {
        eprintln!("no AVX2 + FMA here: nothing to compare");
        return;
    };
    let mut rng = StdRng::seed_from_u64(22);
    for d in [1, 3, 4, 10, 17] {
        let c: Vec<f64> = (0..d).map(|_| rng.gen_range(-1e3..1e3)).collect();
        let x: Vec<f64> = (0..d).map(|_| rng.gen_range(-1e3..1e3)).collect();
        let b64: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
        let b32: Vec<u8> = x.iter().flat_map(|&v| (v as f32).to_le_bytes()).collect();
        let start: Vec<f64> = (0..d).map(|_| rng.gen_range(-1e6..1e6)).collect();
        let (mut s1, mut s2) = (start.clone(), start.clone());
        let a = assign::row::<f64, false, true, true>(&b64, &c, &mut s1);
        let b = simd::row_avx2::<f64, false, true, true>(proof, &b64, &c, &mut s2).unwrap();
        assert_eq!((a.0.to_bits(), a.1.to_bits()), (b.0.to_bits(), b.1.to_bits()), "f64 d={d}");
        assert_eq!(s1, s2);
        let a = assign::row::<f32, false, true, true>(&b32, &c, &mut s1);
        let b = simd::row_avx2::<f32, false, true, true>(proof, &b32, &c, &mut s2).unwrap();
        assert_eq!((a.0.to_bits(), a.1.to_bits()), (b.0.to_bits(), b.1.to_bits()), "f32 d={d}");
        assert_eq!(s1, s2);
    }
}

/// Passes of moves (`moves.rs`) against passes that read every record: the same labels and
/// counts; centres and inertia equal to rounding (the carried sums add in another order); and
/// against the naive reference. The same bits whatever the workers (rule 7).
#[test]
fn passes_of_moves_give_plain_lloyds_labels_and_its_centres_to_rounding() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(21);
    let (d, k, iters) = (4, 7, 15);
    let (x, init) = blobs(&mut rng, 20_000, d, k);
    let (want, want_labels) = naive(&x, d, &init, iters);
    for (scalar, endian) in
        [(Scalar::F64, Endian::Little), (Scalar::F64, Endian::Big), (Scalar::F32, Endian::Little)]
    {
        let dtype = Dtype::new(scalar, endian);
        let (path, init_path) = (dir.path().join("x.npy"), dir.path().join("i.npy"));
        write_npy(&path, &x, d, dtype);
        write_npy(&init_path, &init, d, dtype);
        let run = |below: f64, workers: usize, labels: &str| {
            let cfg = config(k, &init_path, iters, Some(dir.path().join(labels)));
            let pipeline =
                PipelineBuilder::new().block_size(8192).workers(workers).build().unwrap();
            moves::BELOW.with(|o| o.set(Some(below)));
            let r = kmeans(&path, &cfg, &pipeline, &Budget::unlimited()).unwrap();
            moves::BELOW.with(|o| o.set(None));
            (r, read_labels(&dir.path().join(labels)))
        };
        let what = format!("{dtype:?}");
        let (plain, plain_labels) = run(-1.0, 2, "plain.npy");
        let (fast, fast_labels) = run(1.0, 2, "moves.npy");
        assert!(plain.history.iter().all(|h| !h.moves), "{what}");
        let of_moves = fast.history.iter().filter(|h| h.moves).count();
        assert!(of_moves + 1 >= fast.history.len() && of_moves >= 5, "{what}: {of_moves} of moves");
        assert_eq!(fast_labels, plain_labels, "{what}");
        assert_eq!(fast.counts, plain.counts, "{what}");
        assert_eq!(fast.history.len(), plain.history.len(), "{what}");
        let tol = if scalar == Scalar::F64 { 1e-12 } else { 1e-6 };
        let scale = plain.centres.iter().flatten().fold(0.0f64, |m, c| m.max(c.abs()));
        for (a, b) in fast.centres.iter().flatten().zip(plain.centres.iter().flatten()) {
            assert!((a - b).abs() <= tol * scale, "{what}: centre {a} vs {b}");
        }
        for (a, b) in fast.history.iter().zip(&plain.history) {
            assert!((a.inertia - b.inertia).abs() <= 1e-9 * b.inertia, "{what}: {a:?} vs {b:?}");
            assert_eq!(a.assigned, b.assigned, "{what}: the same records fail the same tests");
        }
        assert!((fast.inertia - plain.inertia).abs() <= tol * plain.inertia, "{what}");
        if scalar == Scalar::F64 {
            assert_eq!(fast_labels, want_labels, "{what}: the naive reference's labels");
            for (a, b) in fast.centres.iter().flatten().zip(&want) {
                assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{what}: {a} vs naive {b}");
            }
        }
        let bits = |r: &KmeansReport| -> Vec<u64> {
            let mut v: Vec<u64> = r.centres.iter().flatten().map(|c| c.to_bits()).collect();
            v.extend(r.history.iter().map(|h| h.inertia.to_bits()));
            v.push(r.inertia.to_bits());
            v
        };
        assert_eq!(bits(&run(1.0, 1, "one.npy").0), bits(&fast), "{what}: one worker");
    }
}

/// `moves::apply` (`moves.rs` rule 4): a pass that would empty a cluster, or that lacked
/// bounds, leaves the clusters as they were and asks for the pass again.
#[test]
fn a_pass_of_moves_that_empties_a_cluster_or_lacks_bounds_is_refused() {
    let fold = || kernel::Fold {
        sums: vec![1.0, 2.0, 3.0, 4.0],
        counts: vec![1, 2],
        inertia: vec![0.5, 0.25],
        far: Default::default(),
    };
    let moves = |counts: Vec<i64>, lacking: bool| tree::Sums {
        records: 3,
        sums: vec![-1.0, -2.0, 1.0, 2.0],
        counts,
        inertia: vec![-0.5, 0.75],
        lacking,
        assigned: 1,
    };
    let mut f = fold();
    assert!(!moves::apply(&mut f, &moves(vec![-1, 1], false)), "cluster 0 emptied");
    assert_eq!((f.sums, f.counts), (fold().sums, fold().counts));
    let mut f = fold();
    assert!(!moves::apply(&mut f, &moves(vec![0, 0], true)), "lacking");
    assert_eq!(f.counts, fold().counts);
    let mut f = fold();
    let mut m = moves(vec![1, -1], false);
    m.sums = vec![0.5, 0.5, -0.5, -0.5];
    assert!(moves::apply(&mut f, &m));
    assert_eq!(
        (f.sums, f.counts, f.inertia),
        (vec![1.5, 2.5, 2.5, 3.5], vec![2, 1], vec![0.0, 1.0])
    );
}

/// The inertia from the moments (`moves.rs` rule 3) against the direct sum, for clusters far
/// from the origin (the textbook `Σx² − nμ²` would lose every digit here).
#[test]
fn the_inertia_from_moments_equals_the_direct_sum() {
    let mut rng = StdRng::seed_from_u64(22);
    let d = 3;
    let x: Vec<f64> = (0..3000 * d).map(|_| 1e6 + rng.gen_range(-1.0..1.0)).collect();
    let labels: Vec<usize> = (0..3000).map(|_| rng.gen_range(0..2)).collect();
    let refs: Vec<f64> = (0..2 * d).map(|_| 1e6 + rng.gen_range(-0.5..0.5)).collect();
    let centres: Vec<f64> = (0..2 * d).map(|_| 1e6 + rng.gen_range(-0.5..0.5)).collect();
    let (mut sums, mut counts, mut q, mut direct) =
        (vec![0.0; 2 * d], vec![0u64; 2], vec![0.0; 2], 0.0);
    for (r, &j) in x.chunks_exact(d).zip(&labels) {
        counts[j] += 1;
        for f in 0..d {
            sums[j * d + f] += r[f];
            q[j] += (r[f] - refs[j * d + f]).powi(2);
            direct += (r[f] - centres[j * d + f]).powi(2);
        }
    }
    let fold = kernel::Fold { sums, counts, inertia: q, far: Default::default() };
    let got = moves::inertia(&fold, &refs, &centres, d);
    assert!((got - direct).abs() <= 1e-6 * direct, "{got} vs {direct}");
}
