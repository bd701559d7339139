//! The first centres (rule 2): read from a `.npy` file, or greedy k-means++ on a seeded
//! sample of the records.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use sluice_io::Budget;

use super::{KmeansError, Matrix};
use crate::{Endian, Error, Scalar, npy};

/// Records k-means++ samples at least (all of them when there are fewer).
pub const PLUSPLUS_SAMPLE: u64 = 10_000;

/// xoshiro256** (Blackman and Vigna, 2018), seeded through splitmix64: small, fast, and the
/// same stream for the same seed on every machine.
#[derive(Debug, Clone)]
pub(super) struct Rng([u64; 4]);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        Rng([next(), next(), next(), next()])
    }

    pub(super) fn next_u64(&mut self) -> u64 {
        let s = &mut self.0;
        let out = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        out
    }

    /// Uniform in `[0, 1)`.
    pub(super) fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `0..n` (`n > 0`), by multiply-shift (bias below 2⁻⁶⁴·n).
    pub(super) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// Reads the `(k, d)` centres of `path` (f32 or f64, any byte order), rounded to `scalar`.
pub(super) fn read_centres(
    path: &Path,
    k: usize,
    d: usize,
    scalar: Scalar,
) -> Result<Vec<f64>, KmeansError> {
    let bad = |reason: String| KmeansError::Init { path: path.to_path_buf(), reason };
    let header = npy::read_header(path)?;
    if header.shape != [k as u64, d as u64] {
        return Err(bad(format!("shape {:?}, expected ({k}, {d}) for k = {k}", header.shape)));
    }
    if header.fortran_order && k > 1 && d > 1 {
        return Err(bad("Fortran order is not supported; save it in C order".into()));
    }
    let size = header.dtype.itemsize();
    if !matches!(header.dtype.scalar, Scalar::F32 | Scalar::F64) {
        return Err(bad(format!("dtype {} is not f32 or f64", header.descr)));
    }
    let open_err = |source| Error::Open { path: path.to_path_buf(), source };
    let file = File::open(path).map_err(open_err)?;
    let mut bytes = vec![0u8; k * d * size];
    file.read_exact_at(&mut bytes, header.data_offset).map_err(open_err)?;
    let big = header.dtype.endian == Endian::Big;
    let centres: Vec<f64> = bytes
        .chunks_exact(size)
        .map(|b| {
            let x = decode(b, big);
            if scalar == Scalar::F32 { f64::from(x as f32) } else { x }
        })
        .collect();
    if let Some(i) = centres.iter().position(|c| !c.is_finite()) {
        return Err(bad(format!("centre {} holds a NaN or an infinity", i / d)));
    }
    Ok(centres)
}

/// Greedy k-means++ (Arthur and Vassilvitskii, 2007, with scikit-learn's `2 + ln k` local
/// trials per centre) on `max(PLUSPLUS_SAMPLE, 32k)` records drawn without replacement by
/// `seed` (all records when there are fewer). The sample is read with positioned reads and
/// reserved from `budget`.
pub(super) fn plusplus(
    m: &Matrix,
    k: usize,
    seed: u64,
    budget: &Budget,
) -> Result<Vec<f64>, KmeansError> {
    let d = m.d;
    let mut rng = Rng::new(seed);
    let want = PLUSPLUS_SAMPLE.max(32 * k as u64).min(m.n);
    let _sample_memory = budget.reserve("the k-means++ sample", want * (d as u64 + 2) * 8)?;
    let x = read_sample(m, &mut rng, want)?;
    let n = x.len() / d;
    let row = |i: usize| &x[i * d..(i + 1) * d];
    let sq = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(p, q)| (p - q) * (p - q)).sum::<f64>();
    let trials = 2 + (k as f64).ln() as usize;
    let mut centres = Vec::with_capacity(k * d);
    let first = rng.below(n as u64) as usize;
    centres.extend_from_slice(row(first));
    let mut closest: Vec<f64> = (0..n).map(|i| sq(row(i), row(first))).collect();
    let mut pot: f64 = closest.iter().sum();
    let mut cand = vec![0f64; n];
    let mut best = vec![0f64; n];
    for _ in 1..k {
        let mut cumsum = Vec::with_capacity(n);
        let mut acc = 0.0;
        for &c in &closest {
            acc += c;
            cumsum.push(acc);
        }
        let mut best_pot = f64::INFINITY;
        let mut best_id = 0;
        for _ in 0..trials {
            let r = rng.uniform() * pot;
            let id = cumsum.partition_point(|&c| c < r).min(n - 1);
            for i in 0..n {
                cand[i] = closest[i].min(sq(row(i), row(id)));
            }
            let p: f64 = cand.iter().sum();
            if p < best_pot {
                (best_pot, best_id) = (p, id);
                std::mem::swap(&mut best, &mut cand);
            }
        }
        centres.extend_from_slice(row(best_id));
        std::mem::swap(&mut closest, &mut best);
        pot = best_pot;
    }
    Ok(centres)
}

/// `want` distinct records, in file order (Floyd's sampling without replacement).
fn read_sample(m: &Matrix, rng: &mut Rng, want: u64) -> Result<Vec<f64>, KmeansError> {
    let mut picked = std::collections::BTreeSet::new();
    for j in m.n - want..m.n {
        let t = rng.below(j + 1);
        if !picked.insert(t) {
            picked.insert(j);
        }
    }
    let path = &m.info.path;
    let open_err = |source| Error::Open { path: path.to_path_buf(), source };
    let file = File::open(path).map_err(open_err)?;
    let size = m.info.dtype.itemsize();
    let rec = m.d * size;
    let big = m.info.dtype.endian == Endian::Big;
    let mut buf = vec![0u8; rec];
    let mut x = Vec::with_capacity(picked.len() * m.d);
    for &i in &picked {
        let offset = m.info.data_offset + i * rec as u64;
        file.read_exact_at(&mut buf, offset).map_err(open_err)?;
        for b in buf.chunks_exact(size) {
            let v = decode(b, big);
            if !v.is_finite() {
                return Err(KmeansError::NonFinite { path: path.clone(), record: i, offset });
            }
            x.push(v);
        }
    }
    Ok(x)
}

/// One f32 or f64 (by `bytes.len()`) as f64.
fn decode(bytes: &[u8], big: bool) -> f64 {
    match (bytes.try_into(), bytes.try_into()) {
        (Ok(b), _) if big => f64::from_be_bytes(b),
        (Ok(b), _) => f64::from_le_bytes(b),
        (_, Ok(b)) if big => f64::from(f32::from_be_bytes(b)),
        (_, Ok(b)) => f64::from(f32::from_le_bytes(b)),
        _ => unreachable!("k-means reads 4- or 8-byte floats"),
    }
}
