//! Stats against a naive reference: the whole file read into memory, decoded element by element,
//! figures computed with plain loops (two-pass variance, edge search for the histogram). It
//! shares no code with the kernel.

use proptest::prelude::*;
use rand::{Rng, SeedableRng, rngs::StdRng};
use sluice_io::{Backend, DirectMode, Engine, PipelineBuilder};

use std::path::Path;

use sluice_io::Budget;

use super::*;
use crate::{Dtype, Endian, Scalar, npy};

/// What the reference computes.
#[derive(Debug)]
struct Naive {
    count: u64,
    nan: u64,
    fsum: f64,
    isum: i128,
    min: Option<f64>,
    max: Option<f64>,
    imin: Option<i128>,
    imax: Option<i128>,
    mean: Option<f64>,
    var: Option<f64>,
    var1: Option<f64>,
    hist: Option<Vec<u64>>,
}

/// IEEE 754 binary16 by its definition (sign, 5-bit exponent biased by 15, 10-bit fraction;
/// exponent 0 subnormal, 31 infinity or NaN), independent of the `half` crate the kernel uses.
fn binary16(bits: u16) -> f64 {
    let sign = if bits >> 15 == 1 { -1.0 } else { 1.0 };
    let exp = i32::from(bits >> 10 & 0x1f);
    let frac = f64::from(bits & 0x3ff);
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        31 if frac == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        e => sign * (1.0 + frac / 1024.0) * 2f64.powi(e - 15),
    }
}

fn decode(bytes: &[u8], dtype: Dtype) -> (Vec<f64>, Vec<i128>) {
    let mut floats = Vec::new();
    let mut ints = Vec::new();
    for c in bytes.chunks_exact(dtype.itemsize()) {
        let mut b = c.to_vec();
        if dtype.endian == Endian::Big {
            b.reverse();
        }
        let mut le = [0u8; 8];
        le[..b.len()].copy_from_slice(&b);
        let u = u64::from_le_bytes(le);
        let bits = 8 * b.len() as u32;
        match dtype.scalar {
            Scalar::F16 => floats.push(binary16(u as u16)),
            Scalar::F32 => floats.push(f32::from_bits(u as u32) as f64),
            Scalar::F64 => floats.push(f64::from_bits(u)),
            Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64 => {
                // Sign-extend from `bits`.
                let shift = 128 - bits;
                ints.push(((u as i128) << shift) >> shift);
            }
            _ => ints.push(u as i128),
        }
    }
    (floats, ints)
}

fn naive(bytes: &[u8], dtype: Dtype, hist: Option<(usize, f64, f64)>) -> Naive {
    let (floats, ints) = decode(bytes, dtype);
    let values: Vec<f64> = if dtype.scalar.is_float() {
        floats.iter().copied().filter(|x| !x.is_nan()).collect()
    } else {
        ints.iter().map(|&i| i as f64).collect()
    };
    let count = (floats.len() + ints.len()) as u64;
    let n = values.len();
    // Compensated sum over all values in order.
    let (mut s, mut c) = (0.0f64, 0.0f64);
    for &x in &values {
        let t = s + x;
        c += if s.abs() >= x.abs() { (s - t) + x } else { (x - t) + s };
        s = t;
    }
    let fsum = if s.is_finite() { s + c } else { s };
    let isum: i128 = ints.iter().sum();
    let sum = if dtype.scalar.is_float() { fsum } else { isum as f64 };
    let mean = (n > 0).then(|| sum / n as f64);
    let m2: f64 = mean.map_or(0.0, |m| values.iter().map(|x| (x - m) * (x - m)).sum());
    let hist = hist.map(|(bins, lo, hi)| {
        let step = (hi - lo) / bins as f64;
        let mut edges: Vec<f64> = (0..=bins).map(|i| i as f64 * step + lo).collect();
        edges[bins] = hi;
        let mut counts = vec![0u64; bins];
        for &x in &values {
            if x >= lo && x <= hi {
                let i = (0..bins).rfind(|&i| edges[i] <= x).unwrap_or(0);
                counts[i] += 1;
            }
        }
        counts
    });
    Naive {
        count,
        nan: count - n as u64,
        fsum,
        isum,
        min: values.iter().copied().reduce(f64::min),
        max: values.iter().copied().reduce(f64::max),
        imin: ints.iter().copied().min(),
        imax: ints.iter().copied().max(),
        mean,
        var: mean.map(|_| m2 / n as f64),
        var1: (n > 1).then(|| m2 / (n - 1) as f64),
        hist,
    }
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a.is_infinite() || b.is_infinite() {
        return a == b;
    }
    (a - b).abs() <= rel * a.abs().max(b.abs()) + 1e-300
}

/// Checks a report against the reference: counts, integer figures and the histogram exactly,
/// float figures to `rel`.
fn check(report: &StatsReport, want: &Naive, rel: f64) {
    assert_eq!(report.figures.count, want.count);
    assert_eq!(report.figures.nan_count, want.nan);
    match report.figures.sum {
        Number::Int(i) => assert_eq!(i, want.isum),
        Number::Float(x) => assert!(close(x, want.fsum, rel), "sum {x} vs {}", want.fsum),
    }
    match (report.figures.min, report.figures.max) {
        (Some(Number::Int(lo)), Some(Number::Int(hi))) => {
            assert_eq!((Some(lo), Some(hi)), (want.imin, want.imax));
        }
        (lo, hi) => {
            assert_eq!(lo.map(Number::as_f64), want.min);
            assert_eq!(hi.map(Number::as_f64), want.max);
        }
    }
    let pairs = [
        (report.figures.mean, want.mean, "mean"),
        (report.figures.variance, want.var, "variance"),
        (report.figures.variance_sample, want.var1, "variance_sample"),
    ];
    for (got, want, what) in pairs {
        match (got, want) {
            (Some(g), Some(w)) => assert!(close(g.as_f64(), w, rel * 100.0), "{what} {g} vs {w}"),
            (g, w) => assert_eq!(g.map(Number::as_f64), w, "{what}"),
        }
    }
    assert_eq!(report.figures.histogram.as_ref().map(|h| h.counts.clone()), want.hist);
}

fn encode_floats(values: &[f64], dtype: Dtype) -> Vec<u8> {
    let mut out = Vec::new();
    for &x in values {
        let mut b = match dtype.scalar {
            Scalar::F16 => half::f16::from_f64(x).to_le_bytes().to_vec(),
            Scalar::F32 => (x as f32).to_le_bytes().to_vec(),
            _ => x.to_le_bytes().to_vec(),
        };
        if dtype.endian == Endian::Big {
            b.reverse();
        }
        out.extend_from_slice(&b);
    }
    out
}

/// Seeded data of `n` elements: any bytes for integers; for floats, normal-ish values with a
/// sprinkling of NaN.
fn data(rng: &mut StdRng, dtype: Dtype, n: usize) -> Vec<u8> {
    if dtype.scalar == Scalar::F16 {
        // Every bit pattern: normals, subnormals, ±0, ±inf and NaNs.
        (0..n * 2).map(|_| rng.r#gen()).collect()
    } else if dtype.scalar.is_float() {
        let values: Vec<f64> = (0..n)
            .map(|_| {
                if rng.gen_bool(0.02) {
                    f64::NAN
                } else {
                    rng.gen_range(-100.0..100.0) + rng.gen_range(0.0..1.0f64).powi(3)
                }
            })
            .collect();
        encode_floats(&values, dtype)
    } else {
        (0..n * dtype.itemsize()).map(|_| rng.r#gen()).collect()
    }
}

fn run_stats(path: &Path, config: &StatsConfig, block_size: usize) -> StatsReport {
    run_stats_on(path, config, block_size, 0)
}

/// Every way sluice-io can run a plan (as ripgrep's `SearcherTester` runs every searcher): IOC
/// over io_uring and over pread threads, buffered and O_DIRECT, mmap, and the sync engine, with
/// more workers than cores so that blocks complete out of order.
const PATHS: usize = 5;

pub(crate) fn pipeline_on(block_size: usize, path: usize) -> sluice_io::Pipeline {
    let b = PipelineBuilder::new().block_size(block_size).workers(3);
    let b = match path % PATHS {
        0 => b.direct(DirectMode::Never).mmap(false),
        1 => b.backend(Backend::Pread).direct(DirectMode::Never).mmap(false),
        2 => b.direct(DirectMode::Always),
        3 => b.direct(DirectMode::Auto).mmap(true),
        _ => b.engine(Engine::Sync).direct(DirectMode::Never),
    };
    b.build().unwrap()
}

fn run_stats_on(path: &Path, config: &StatsConfig, block_size: usize, way: usize) -> StatsReport {
    stats(path, config, &pipeline_on(block_size, way), &Budget::unlimited()).unwrap()
}

fn raw_config(dtype: Dtype) -> StatsConfig {
    StatsConfig { dtype: Some(dtype.scalar), endian: Some(dtype.endian), ..StatsConfig::default() }
}

#[test]
fn every_dtype_and_endian_matches_the_naive_reference_raw_and_npy() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    for scalar in Scalar::ALL {
        for endian in [Endian::Little, Endian::Big] {
            let dtype = Dtype::new(scalar, endian);
            let n = 3000 + rng.gen_range(0..100);
            let bytes = data(&mut rng, dtype, n);
            let hist = if scalar.is_float() { (7, -50.0, 60.0) } else { (5, -100.0, 1000.0) };
            let want = naive(&bytes, dtype, Some(hist));
            let raw = dir.path().join(format!("{}.raw", scalar.name()));
            std::fs::write(&raw, &bytes).unwrap();
            let config = StatsConfig {
                bins: Some(hist.0),
                range: Some((hist.1, hist.2)),
                ..raw_config(dtype)
            };
            check(&run_stats(&raw, &config, 4096), &want, 1e-12);
            let npy = dir.path().join(format!("{}.npy", scalar.name()));
            let mut file = npy::write_header(dtype, &[n as u64], false);
            file.extend_from_slice(&bytes);
            std::fs::write(&npy, &file).unwrap();
            let config = StatsConfig {
                bins: Some(hist.0),
                range: Some((hist.1, hist.2)),
                ..Default::default()
            };
            for way in 0..PATHS {
                let report = run_stats_on(&npy, &config, 8192, way);
                assert_eq!((report.format, report.dtype.clone()), ("npy", dtype.descr()));
                check(&report, &want, 1e-12);
            }
        }
    }
}

#[test]
fn rule1_count_includes_nans_and_nan_count_excludes_them() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("n.f64");
    let dtype = Dtype::new(Scalar::F64, Endian::Little);
    std::fs::write(&p, encode_floats(&[f64::NAN, 1.0, f64::NAN, 3.0], dtype)).unwrap();
    let r = run_stats(&p, &raw_config(dtype), 4096).figures;
    assert_eq!((r.count, r.nan_count), (4, 2));
    assert_eq!((r.sum, r.mean), (Number::Float(4.0), Some(Number::Float(2.0))));
    assert_eq!(r.variance, Some(Number::Float(1.0)));
    assert_eq!(r.variance_sample, Some(Number::Float(2.0)));
    // All NaN: nothing to describe (rule 4).
    std::fs::write(&p, encode_floats(&[f64::NAN; 3], dtype)).unwrap();
    let r = run_stats(&p, &raw_config(dtype), 4096).figures;
    assert_eq!((r.count, r.nan_count, r.sum), (3, 3, Number::Float(0.0)));
    assert_eq!((r.min, r.mean, r.variance), (None, None, None));
}

#[test]
fn rule2_integer_sums_are_exact_beyond_64_bits() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.u64");
    let n = 5000u64;
    let bytes: Vec<u8> = (0..n).flat_map(|i| (u64::MAX - i).to_be_bytes()).collect();
    std::fs::write(&p, bytes).unwrap();
    let config = raw_config(Dtype::new(Scalar::U64, Endian::Big));
    let r = run_stats(&p, &config, 4096);
    let want: i128 = (0..n as i128).map(|i| u64::MAX as i128 - i).sum();
    assert_eq!(r.figures.sum, Number::Int(want));
    assert_eq!(r.figures.max, Some(Number::Int(u64::MAX as i128)));
    assert_eq!(r.figures.min, Some(Number::Int((u64::MAX - (n - 1)) as i128)));
    let json = serde_json::to_string(&r.figures.sum).unwrap();
    assert_eq!(json, want.to_string(), "printed as a JSON integer");
}

#[test]
fn rule2_float_sum_is_accurate_where_a_plain_loop_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("tenths.f64");
    let dtype = Dtype::new(Scalar::F64, Endian::Little);
    let n = 1_000_000;
    std::fs::write(&p, encode_floats(&vec![0.1; n], dtype)).unwrap();
    let r = run_stats(&p, &raw_config(dtype), 65536);
    let plain: f64 = (0..n).map(|_| 0.1).sum();
    let exact = 100_000.0;
    assert!((r.figures.sum.as_f64() - exact).abs() / exact < 1e-14, "{}", r.figures.sum);
    assert!((plain - exact).abs() / exact > 1e-12, "the plain loop drifts: {plain}");
}

#[test]
fn rule3_variance_survives_a_large_offset() {
    // 1e9 + {0, 1, 2, 3}: Σx² − n·mean² cancels to garbage in f64; Chan's merge does not.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("offset.f64");
    let dtype = Dtype::new(Scalar::F64, Endian::Little);
    let values: Vec<f64> = (0..100_000).map(|i| 1e9 + (i % 4) as f64).collect();
    std::fs::write(&p, encode_floats(&values, dtype)).unwrap();
    let r = run_stats(&p, &raw_config(dtype), 4096);
    assert!(close(r.figures.variance.unwrap().as_f64(), 1.25, 1e-9), "{:?}", r.figures.variance);
    assert!(close(r.figures.mean.unwrap().as_f64(), 1e9 + 1.5, 1e-15), "{:?}", r.figures.mean);
}

#[test]
fn rule4_empty_array_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        ("e.raw", Vec::new()),
        ("e.npy", npy::write_header(Dtype::new(Scalar::I32, Endian::Little), &[0, 4], false)),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let config = StatsConfig { dtype: Some(Scalar::I32), ..Default::default() };
        let r = run_stats(&p, &config, 4096);
        let f = &r.figures;
        assert_eq!((f.count, f.nan_count, f.sum), (0, 0, Number::Int(0)));
        assert_eq!(
            (f.min, f.max, f.mean, f.variance, f.variance_sample),
            (None, None, None, None, None)
        );
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["sum"], 0);
        assert!(json["min"].is_null() && json["mean"].is_null());
    }
}

#[test]
fn rule5_infinities_behave_as_in_numpy() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("inf.f64");
    let dtype = Dtype::new(Scalar::F64, Endian::Little);
    std::fs::write(&p, encode_floats(&[1.0, f64::INFINITY, 2.0], dtype)).unwrap();
    let r = run_stats(&p, &raw_config(dtype), 4096);
    assert_eq!(
        (r.figures.sum, r.figures.max),
        (Number::Float(f64::INFINITY), Some(Number::Float(f64::INFINITY)))
    );
    assert_eq!(r.figures.mean, Some(Number::Float(f64::INFINITY)));
    assert!(r.figures.variance.unwrap().as_f64().is_nan());
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!((json["sum"].as_str(), json["variance"].as_str()), (Some("inf"), Some("nan")));
    std::fs::write(&p, encode_floats(&[f64::NEG_INFINITY, 1.0, f64::INFINITY], dtype)).unwrap();
    let r = run_stats(&p, &raw_config(dtype), 4096);
    assert!(r.figures.sum.as_f64().is_nan());
    assert_eq!(r.figures.min, Some(Number::Float(f64::NEG_INFINITY)));
}

#[test]
fn rule6_histogram_edges_and_closed_last_bin() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("h.f64");
    let dtype = Dtype::new(Scalar::F64, Endian::Little);
    // Values on every edge, outside the range, NaN and inf.
    let values = [0.0, 0.25, 0.5, 0.75, 1.0, -0.1, 1.1, f64::NAN, f64::INFINITY, 0.1, 0.3];
    std::fs::write(&p, encode_floats(&values, dtype)).unwrap();
    let config = StatsConfig { bins: Some(4), range: Some((0.0, 1.0)), ..raw_config(dtype) };
    let r = run_stats(&p, &config, 4096);
    let h = r.figures.histogram.unwrap();
    assert_eq!(h.edges, vec![0.0, 0.25, 0.5, 0.75, 1.0]);
    assert_eq!(h.counts, vec![2, 2, 1, 2]);
    // lo == hi widens by 0.5 each way; range alone means 10 bins.
    let config = StatsConfig { range: Some((1.0, 1.0)), ..raw_config(dtype) };
    let h = run_stats(&p, &config, 4096).figures.histogram.unwrap();
    assert_eq!((h.edges[0], h.edges[10], h.counts.iter().sum::<u64>()), (0.5, 1.5, 4));
}

#[test]
fn rule6_bad_histogram_options_are_errors() {
    for (config, word) in [
        (StatsConfig { bins: Some(3), ..Default::default() }, "need a range"),
        (
            StatsConfig { bins: Some(0), range: Some((0.0, 1.0)), ..Default::default() },
            "0 is less than 1",
        ),
        (StatsConfig { range: Some((2.0, 1.0)), ..Default::default() }, "not an interval"),
    ] {
        let err = config.histogram().unwrap_err().to_string();
        assert!(err.contains(word), "{err}");
    }
}

#[test]
fn rule7_two_runs_give_identical_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(11);
    let dtype = Dtype::new(Scalar::F32, Endian::Big);
    let p = dir.path().join("r.f32");
    std::fs::write(&p, data(&mut rng, dtype, 50_000)).unwrap();
    let config = StatsConfig { bins: Some(16), range: Some((-90.0, 90.0)), ..raw_config(dtype) };
    let figures = |r: StatsReport| {
        let mut v = serde_json::to_value(&r).unwrap();
        v.as_object_mut().unwrap().remove("run");
        serde_json::to_vec(&v).unwrap()
    };
    let first = figures(run_stats(&p, &config, 4096));
    assert_eq!(first, figures(run_stats(&p, &config, 4096)));
    // Partials are folded in stream order, so the engine and the completion order do not matter.
    for way in 0..PATHS {
        assert_eq!(first, figures(run_stats_on(&p, &config, 4096, way)), "path {way}");
    }
}

#[test]
fn rule7_fortran_order_gives_the_same_figures() {
    let dir = tempfile::tempdir().unwrap();
    let dtype = Dtype::new(Scalar::I16, Endian::Little);
    let bytes: Vec<u8> = (0..600i16).flat_map(|i| (i * 7 - 900).to_le_bytes()).collect();
    let mut reports = Vec::new();
    for fortran in [false, true] {
        let p = dir.path().join(format!("{fortran}.npy"));
        let mut f = npy::write_header(dtype, &[20, 30], fortran);
        f.extend_from_slice(&bytes);
        std::fs::write(&p, f).unwrap();
        let r = run_stats(&p, &StatsConfig::default(), 4096);
        assert_eq!((r.fortran_order, r.shape.clone()), (fortran, vec![20, 30]));
        let f = r.figures;
        reports.push((f.sum, f.min, f.max, f.mean, f.variance));
    }
    assert_eq!(reports[0], reports[1]);
}

#[test]
fn rule8_bad_inputs_are_typed_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = PipelineBuilder::new().build().unwrap();
    let run = |p: &Path, config: &StatsConfig| {
        stats(p, config, &pipeline, &Budget::unlimited()).unwrap_err()
    };
    let odd = dir.path().join("odd.raw");
    std::fs::write(&odd, [0u8; 13]).unwrap();
    let err = run(&odd, &StatsConfig { dtype: Some(Scalar::F32), ..Default::default() });
    assert!(matches!(err, Error::RawSize { len: 13, itemsize: 4, .. }), "{err}");
    assert!(err.to_string().contains("odd.raw") && err.to_string().contains("13"), "{err}");
    let err = run(&odd, &StatsConfig::default());
    assert!(matches!(err, Error::RawNeedsDtype { .. }), "{err}");
    // Library errors speak the library's language; the CLI adds its flag names (issue 10).
    assert!(err.to_string().contains("no dtype") && !err.to_string().contains("--"), "{err}");
    let npy_path = dir.path().join("a.npy");
    let mut f = npy::write_header(Dtype::new(Scalar::F64, Endian::Little), &[2], false);
    f.extend_from_slice(&[0u8; 16]);
    std::fs::write(&npy_path, f).unwrap();
    let err = run(&npy_path, &StatsConfig { dtype: Some(Scalar::I64), ..Default::default() });
    assert!(matches!(err, Error::DtypeMismatch { what: "dtype", .. }), "{err}");
    assert!(!err.to_string().contains("--"), "{err}");
    let err = run(&npy_path, &StatsConfig { endian: Some(Endian::Big), ..Default::default() });
    assert!(matches!(err, Error::DtypeMismatch { what: "endian", .. }), "{err}");
    let config = StatsConfig {
        dtype: Some(Scalar::F64),
        endian: Some(Endian::Little),
        ..Default::default()
    };
    assert_eq!(
        stats(&npy_path, &config, &pipeline, &Budget::unlimited()).unwrap().figures.count,
        2
    );
    let err = run(&dir.path().join("missing.f64"), &config);
    assert!(matches!(err, Error::Open { .. }) && err.to_string().contains("missing.f64"));
    let err = run(dir.path(), &config);
    assert!(matches!(err, Error::NotAFile { .. }), "{err}");
    let fake = dir.path().join("fake.npy");
    std::fs::write(&fake, b"not numpy at all").unwrap();
    let err = run(&fake, &StatsConfig::default());
    assert!(err.to_string().contains("magic"), "{err}");
}

#[test]
fn histogram_over_budget_is_refused_before_the_pass() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.u8");
    std::fs::write(&p, [1u8, 2, 3]).unwrap();
    let budget = Budget::new(sluice_io::memory::BASELINE_BYTES + 1000).unwrap();
    let config = StatsConfig {
        dtype: Some(Scalar::U8),
        bins: Some(1000),
        range: Some((0.0, 9.0)),
        ..Default::default()
    };
    let pipeline = PipelineBuilder::new().build().unwrap();
    let err = stats(&p, &config, &pipeline, &budget).unwrap_err();
    assert!(err.to_string().contains("histogram"), "{err}");
}

#[test]
fn hints_set_the_same_fields_as_flags() {
    let config = StatsConfig::from_hints(&[
        ("dtype", "float32"),
        ("Endian", "big"),
        ("bins", "8"),
        ("range", "0,2"),
    ])
    .unwrap();
    assert_eq!(
        config,
        StatsConfig {
            dtype: Some(Scalar::F32),
            endian: Some(Endian::Big),
            bins: Some(8),
            range: Some((0.0, 2.0))
        }
    );
    let err = StatsConfig::from_hints(&[("colour", "red")]).unwrap_err().to_string();
    assert!(err.contains("colour") && err.contains("dtype"), "{err}");
    let err = StatsConfig::from_hints(&[("dtype", "f128")]).unwrap_err().to_string();
    assert!(err.contains("dtype") && err.contains("f128"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// Rule 7: counts, integer figures and the histogram are the same for every block size;
    /// float figures agree with the reference.
    #[test]
    fn rule7_block_size_does_not_change_results(
        scalar in 0usize..Scalar::ALL.len(),
        big in any::<bool>(),
        is_npy in any::<bool>(),
        n in 0usize..6000,
        k in 1usize..5,
        seed in any::<u64>(),
        way in 0..PATHS,
    ) {
        let dtype = Dtype::new(Scalar::ALL[scalar], if big { Endian::Big } else { Endian::Little });
        let mut rng = StdRng::seed_from_u64(seed);
        let bytes = data(&mut rng, dtype, n);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(if is_npy { "p.npy" } else { "p.raw" });
        let mut file = if is_npy { npy::write_header(dtype, &[n as u64], false) } else { Vec::new() };
        file.extend_from_slice(&bytes);
        std::fs::write(&p, file).unwrap();
        let config = StatsConfig { bins: Some(9), range: Some((-60.0, 200.0)), ..raw_config(dtype) };
        let want = naive(&bytes, dtype, Some((9, -60.0, 200.0)));
        let a = run_stats_on(&p, &config, 4096 * k, way);
        let b = run_stats(&p, &config, 1 << 20);
        check(&a, &want, 1e-12);
        check(&b, &want, 1e-12);
        let (a, b) = (a.figures, b.figures);
        prop_assert_eq!((a.count, a.nan_count, a.min, a.max), (b.count, b.nan_count, b.min, b.max));
        prop_assert_eq!(a.histogram, b.histogram);
        if !dtype.scalar.is_float() {
            prop_assert_eq!(a.sum, b.sum);
        }
    }
}

/// `axis` rules 1–3 against a second way: each column written as a 1-D array of its own and
/// taken by the whole-array pass. Integer figures exact, float figures to rounding; C and
/// Fortran order; block sizes that split rows and columns.
#[test]
fn axis0_columns_equal_the_whole_array_figures_of_each_column() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(21);
    for (scalar, rows, cols, fortran, block) in [
        (Scalar::F64, 700, 5, false, 4096),
        (Scalar::F32, 513, 3, true, 4096),
        (Scalar::I16, 999, 7, false, 8192),
        (Scalar::F16, 1200, 2, true, 4096),
        (Scalar::U64, 3, 900, false, 4096),
    ] {
        let dtype = Dtype::new(scalar, Endian::Little);
        let size = dtype.itemsize();
        let bytes = data(&mut rng, dtype, rows * cols);
        let mut file = npy::write_header(dtype, &[rows as u64, cols as u64], fortran);
        file.extend_from_slice(&bytes);
        let path = dir.path().join("m.npy");
        std::fs::write(&path, file).unwrap();
        let pipeline = pipeline_on(block, 0);
        let report =
            super::stats_axis0(&path, &StatsConfig::default(), &pipeline, &Budget::unlimited())
                .unwrap();
        assert_eq!(report.columns.len(), cols);
        for (j, got) in report.columns.iter().enumerate() {
            let column: Vec<u8> = (0..rows)
                .flat_map(|i| {
                    let at = if fortran { j * rows + i } else { i * cols + j };
                    bytes[at * size..(at + 1) * size].to_vec()
                })
                .collect();
            let mut one = npy::write_header(dtype, &[rows as u64], false);
            one.extend_from_slice(&column);
            let p1 = dir.path().join("c.npy");
            std::fs::write(&p1, one).unwrap();
            let want = run_stats(&p1, &StatsConfig::default(), block).figures;
            assert_eq!(
                (got.count, got.nan_count, got.min, got.max),
                (want.count, want.nan_count, want.min, want.max)
            );
            let near = |a: Option<Number>, b: Option<Number>| match (a, b) {
                (Some(a), Some(b)) => {
                    let (a, b) = (a.as_f64(), b.as_f64());
                    (a.is_nan() && b.is_nan())
                        || a == b
                        || (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
                }
                (a, b) => a.is_none() && b.is_none(),
            };
            assert!(near(Some(got.sum), Some(want.sum)), "{scalar:?} column {j}");
            assert!(
                near(got.mean, want.mean) && near(got.variance, want.variance),
                "{scalar:?} {j}"
            );
        }
    }
}

#[test]
fn axis0_state_size_named_in_the_docs_is_right() {
    // `axis.rs` documents 112 bytes per partial entry and about 22 KiB per column.
    assert_eq!(std::mem::size_of::<BlockStats>(), 112);
    let per_column = super::axis::column_state();
    assert!((20 << 10..24 << 10).contains(&per_column), "{per_column}");
}
