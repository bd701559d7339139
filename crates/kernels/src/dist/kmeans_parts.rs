//! k-means over per-rank parts (`data.part-0000`, … or a list; `dist` rules 1–3): rank `r`
//! reads part `r` whole, and the parts in order are the data.
//!
//! # Contract
//! 1. One part per rank: `parts.len()` must equal the section's p (every rank says so, before
//!    any exchange). Each part holds at least `k` records, of the same `d` and dtype.
//! 2. The first centres come from `--init FILE` (read by rank 0, sent to all): k-means++
//!    samples the whole data by record index, which a rank holding one part cannot do, so it
//!    is refused rather than drawn from part 0 only.
//! 3. Each part's blocks are numbered after the reads of the parts before it (the leaves of
//!    `kmeans/tree.rs`), its records after theirs, so every pass combines in one canonical
//!    tree: the same bits whatever the rank count's layout of the same parts. Where every part
//!    but the last is a whole number of pipeline reads of a headerless file, the parts' reads
//!    are the concatenated file's, and the result equals one process on the concatenation bit
//!    for bit, labels included (tested); otherwise it equals it to rounding.
//! 4. A NaN or an infinity is reported on every rank with the part that holds it and the
//!    record's number and byte offset in that part.

use std::path::PathBuf;

use sluice_bsp::Ctx;
use sluice_bsp::collectives::gather_varied;
use sluice_io::placement::reads_in;
use sluice_io::{Budget, Pipeline};

use super::kmeans::{Ranks, agree, sum_assigned, write_labels};
use crate::Error;
use crate::kmeans::stripe as whole_stripe;
use crate::kmeans::{Init, KmeansConfig, KmeansError, KmeansReport, first_centres, fit, setup};

/// Clusters the records of `parts`, in order, with part `r` on rank `r` (collective over
/// `ctx`'s section). Every rank returns the same figures; `run` holds this rank's passes.
pub fn kmeans_parts(
    ctx: &mut Ctx,
    parts: &[PathBuf],
    config: &KmeansConfig,
    pipeline: &Pipeline,
    budget: &Budget,
) -> Result<KmeansReport, KmeansError> {
    let (rank, p) = (ctx.pid() as usize, ctx.nprocs() as usize);
    if parts.len() != p {
        return Err(Error::BadValue {
            key: "parts".into(),
            value: format!("{} parts on {p} ranks", parts.len()),
            expected: "one part per rank (mpirun -np as many as the parts)".into(),
        });
    }
    if config.init == Init::KMeansPlusPlus {
        return Err(KmeansError::Init {
            path: parts[0].clone(),
            reason: "k-means++ over parts needs samples from every part; give --init FILE".into(),
        });
    }
    let part = &parts[rank];
    let bs = pipeline.block_size();
    // Round 1: every rank opens its part; rank 0 reads the first centres.
    let opened = setup(part, config, budget).and_then(|(m, state)| {
        let centres = if rank == 0 { first_centres(&m, config, budget)? } else { Vec::new() };
        Ok((m, state, centres))
    });
    let (payload, opened) = match opened {
        Ok((m, state, centres)) => {
            let s = whole_stripe(&m, bs, 0, 1);
            let mut words = vec![m.n, reads_in(s.offset, s.len, bs), m.d as u64];
            words.extend([m.record_bytes(), s.offset]);
            words.extend(centres.iter().map(|c| c.to_bits()));
            let bytes = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            (Ok(bytes), Some((m, state)))
        }
        Err(e) => (Err(e), None),
    };
    let records = agree(ctx, payload)?;
    let (mut m, _state) = opened.expect("agree returned Ok");
    let held: Vec<Vec<u64>> = records
        .iter()
        .map(|r| r.chunks_exact(8).map(|w| u64::from_le_bytes(w.try_into().expect("8"))).collect())
        .collect();
    if let Some(r) = held.iter().position(|h| h[2..4] != held[0][2..4]) {
        return Err(KmeansError::Shape {
            path: parts[r].clone(),
            shape: vec![held[r][0], held[r][2]],
            reason: format!(
                "records of {} bytes ({} values), part 0's of {} ({})",
                held[r][3], held[r][2], held[0][3], held[0][2]
            ),
        });
    }
    let centres: Vec<f64> = held[0][5..].iter().map(|&w| f64::from_bits(w)).collect();
    let before = |i: usize| -> u64 { held[..rank].iter().map(|h| h[i]).sum() };
    let mut mine = whole_stripe(&m, bs, 0, 1);
    (mine.record0, mine.first_read) = (before(0), before(1));
    let (local_n, total) = (m.n, held.iter().map(|h| h[0]).sum());
    // The update step and the tolerance count every part's records.
    m.n = total;
    let want_labels = config.labels.is_some();
    let _labels_memory = if want_labels {
        let all = if rank == 0 { total } else { local_n };
        Some(budget.reserve("the k-means labels", all * 4 * 2)?)
    } else {
        None
    };
    let mut labels = Vec::new();
    let report = fit(&m, config, centres, mine, pipeline, budget, &mut Ranks(ctx), |l| {
        if want_labels {
            labels.extend(l.iter().flat_map(|j| j.to_le_bytes()));
        }
    });
    let report = report.map_err(|e| in_its_part(e, parts, &held))?;
    let report = sum_assigned(ctx, report)?;
    if let Some(target) = &config.labels {
        let (all, _) = gather_varied(ctx, 0, &labels).map_err(Error::from)?;
        drop(labels);
        let written = if rank == 0 { write_labels(target, total, &all) } else { Ok(()) };
        agree(ctx, written.map(|()| Vec::new()))?;
    }
    Ok(report)
}

/// Rule 4: a non-finite record numbered among all records, named in the part holding it.
fn in_its_part(e: KmeansError, parts: &[PathBuf], held: &[Vec<u64>]) -> KmeansError {
    let KmeansError::NonFinite { record, .. } = e else { return e };
    let mut first = 0;
    for (path, h) in parts.iter().zip(held) {
        if record < first + h[0] {
            let local = record - first;
            let offset = h[4] + local * h[3];
            return KmeansError::NonFinite { path: path.clone(), record: local, offset };
        }
        first += h[0];
    }
    e
}

#[cfg(test)]
mod tests {
    //! On the threads backend: parts cut at read boundaries of a raw file equal one process on
    //! the concatenation bit for bit (figures and labels); `.npy` parts of any sizes equal it
    //! to rounding; a NaN is named in its part; the refusals of rules 1 and 2.

    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    use rand::{Rng, SeedableRng};
    use sluice_bsp::{Args, ExecConfig, exec_with};
    use sluice_io::{Budget, Pipeline, PipelineBuilder};

    use super::kmeans_parts;
    use crate::kmeans::{Init, KmeansConfig, KmeansReport};
    use crate::{Dtype, Endian, Scalar};

    const D: usize = 4;

    fn pipeline() -> Pipeline {
        PipelineBuilder::new().block_size(4096).build().unwrap()
    }

    fn key(r: &KmeansReport) -> String {
        let h: Vec<_> = r.history.iter().map(|i| (i.inertia, i.shift, i.relocated)).collect();
        format!("{:?} {:?} {:?} {:?} {:?}", r.centres, r.counts, r.inertia.to_bits(), h, r.stop)
    }

    fn chain(e: &dyn std::error::Error) -> String {
        let mut text = e.to_string();
        let mut source = e.source();
        while let Some(c) = source {
            text = format!("{text}: {c}");
            source = c.source();
        }
        text
    }

    fn run(parts: &[PathBuf], config: &KmeansConfig) -> Vec<Result<KmeansReport, String>> {
        let p = parts.len() as u32;
        let out = Mutex::new((0..p).map(|_| None).collect::<Vec<_>>());
        exec_with(
            &ExecConfig::new(p, true),
            p,
            |ctx, s, _, _| {
                let r = kmeans_parts(ctx, parts, config, &pipeline(), &Budget::unlimited());
                out.lock().unwrap()[s as usize] = Some(r.map_err(|e| chain(&e)));
            },
            Args::none(),
        )
        .unwrap();
        out.into_inner().unwrap().into_iter().map(Option::unwrap).collect()
    }

    /// `n` records of `D` f64 values in 5 blobs.
    fn records(n: usize, seed: u64) -> Vec<f64> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let centres: Vec<f64> = (0..5 * D).map(|_| rng.gen_range(-50.0..50.0)).collect();
        (0..n * D).map(|i| centres[(i / D % 5) * D + i % D] + rng.r#gen::<f64>() * 3.0).collect()
    }

    fn bytes(x: &[f64]) -> Vec<u8> {
        x.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    fn npy(path: &Path, x: &[f64]) {
        let dtype = Dtype::new(Scalar::F64, Endian::Little);
        let mut out = crate::npy::write_header(dtype, &[(x.len() / D) as u64, D as u64], false);
        out.extend(bytes(x));
        std::fs::write(path, out).unwrap();
    }

    /// Cuts `x` after the given record counts into `dir/NAME.part-NNNN` files.
    fn cut(dir: &Path, x: &[f64], sizes: &[usize], as_npy: bool) -> Vec<PathBuf> {
        let mut at = 0;
        let mut paths = Vec::new();
        for (i, &n) in sizes.iter().enumerate() {
            let path = dir.join(format!("{}.part-{i:04}", if as_npy { "n" } else { "r" }));
            let chunk = &x[at * D..(at + n) * D];
            if as_npy {
                npy(&path, chunk)
            } else {
                std::fs::write(&path, bytes(chunk)).unwrap()
            }
            paths.push(path);
            at += n;
        }
        paths
    }

    fn config(dir: &Path, x: &[f64], labels: Option<PathBuf>) -> KmeansConfig {
        let init = dir.join("init.npy");
        // Six records spread through the data (not part 0's only).
        let picks: Vec<f64> = [3, 700, 1100, 1000, 90, 1150]
            .iter()
            .flat_map(|&i| x[i * D..(i + 1) * D].to_vec())
            .collect();
        let dtype = Dtype::new(Scalar::F64, Endian::Little);
        let mut out = crate::npy::write_header(dtype, &[6, D as u64], false);
        out.extend(bytes(&picks));
        std::fs::write(&init, out).unwrap();
        KmeansConfig {
            k: 6,
            dims: Some(D),
            dtype: Some(Scalar::F64),
            init: Init::File(init),
            threshold: 0.0,
            max_iter: 15,
            labels,
            ..KmeansConfig::default()
        }
    }

    #[test]
    fn parts_on_read_boundaries_equal_the_concatenation_bit_for_bit() {
        let dir = tempfile::tempdir().unwrap();
        // 128 records of 32 bytes per 4096-byte read: parts of 3, 5, 1 and 2⅓ reads.
        let sizes = [384, 640, 128, 273];
        let x = records(sizes.iter().sum(), 1);
        let whole = dir.path().join("whole.raw");
        std::fs::write(&whole, bytes(&x)).unwrap();
        let one = dir.path().join("one.npy");
        let c = config(dir.path(), &x, Some(one.clone()));
        let single = crate::kmeans::kmeans(&whole, &c, &pipeline(), &Budget::unlimited()).unwrap();
        for p in 1..=sizes.len() {
            // The first p − 1 parts as they are, the rest in the last one.
            let mut s = sizes[..p - 1].to_vec();
            s.push(sizes[p - 1..].iter().sum());
            let sub = dir.path().join(format!("p{p}"));
            std::fs::create_dir(&sub).unwrap();
            let parts = cut(&sub, &x, &s, false);
            let labels = sub.join("labels.npy");
            let c = KmeansConfig { labels: Some(labels.clone()), ..c.clone() };
            for got in run(&parts, &c) {
                assert_eq!(key(&got.unwrap()), key(&single), "p = {p}");
            }
            assert_eq!(std::fs::read(&labels).unwrap(), std::fs::read(&one).unwrap(), "p = {p}");
        }
    }

    #[test]
    fn npy_parts_of_any_size_equal_the_concatenation_to_rounding() {
        let dir = tempfile::tempdir().unwrap();
        let sizes = [301, 999, 77, 1000];
        let x = records(sizes.iter().sum(), 2);
        let whole = dir.path().join("whole.npy");
        npy(&whole, &x);
        let c = KmeansConfig { dims: None, dtype: None, ..config(dir.path(), &x, None) };
        let single = crate::kmeans::kmeans(&whole, &c, &pipeline(), &Budget::unlimited()).unwrap();
        let parts = cut(dir.path(), &x, &sizes, true);
        let got = run(&parts, &c);
        let first = key(got[0].as_ref().unwrap());
        for g in &got {
            let g = g.as_ref().unwrap();
            assert_eq!(key(g), first, "every rank the same bits");
            assert_eq!(g.counts, single.counts);
            for (a, b) in g.centres.iter().flatten().zip(single.centres.iter().flatten()) {
                assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{a} vs {b}");
            }
        }
    }

    #[test]
    fn a_nan_is_named_in_its_part_and_bad_layouts_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut x = records(1200, 3);
        x[(400 + 250) * D + 1] = f64::NAN;
        let parts = cut(dir.path(), &x, &[400, 400, 400], false);
        let c = config(dir.path(), &x, None);
        for got in run(&parts, &c) {
            let e = got.unwrap_err();
            assert!(e.contains("r.part-0001") && e.contains("record 250"), "{e}");
            assert!(e.contains(&format!("byte offset {}", 250 * D * 8)), "{e}");
        }
        let pp = KmeansConfig { init: Init::KMeansPlusPlus, ..c.clone() };
        assert!(run(&parts, &pp).iter().all(|r| r.as_ref().unwrap_err().contains("--init")));
        let two = run(&parts[..2], &c);
        assert!(two.iter().all(|r| r.is_err()), "a NaN in part 1 of 2 still fails");
        // Parts of different widths: every rank names the odd one.
        let odd = dir.path().join("r.part-0002");
        std::fs::write(&odd, bytes(&x[..1203])).unwrap();
        let c3 = KmeansConfig { dims: Some(D), ..c };
        for got in run(&parts, &c3) {
            assert!(got.unwrap_err().contains("r.part-0002"));
        }
    }
}
