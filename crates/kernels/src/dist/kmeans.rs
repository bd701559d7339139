//! k-means over a shared file on every process of a BSP section (`dist` rules 1–3; the
//! kernel's rules in `kmeans`).
//!
//! Each process reads its stripe, cut on a read boundary that is also a record boundary, so its
//! blocks are the single process's blocks there (`kmeans/tree.rs`). Per pass, the processes
//! allgather their O(log n) canonical tree nodes of the `k × d` sums, counts and inertia, with
//! their `k` farthest records and first bad record, and each pushes them in rank order into
//! one tree: every process holds the same, single-process bits and takes the same update step,
//! empty-cluster relocation included (the farthest records of the whole data). Rank 0 draws the
//! k-means++ sample and sends the first centres. The final labels are gathered, in rank order
//! (file order), to rank 0, which writes the one `.npy` (temp + rename). The data never moves.

use std::io::Write;
use std::path::Path;

use sluice_bsp::Ctx;
use sluice_bsp::collectives::{allgather_varied, gather_varied};
use sluice_io::{Budget, OutputFile, Pipeline};

use super::exchange::error_chain;
use crate::Error;
use crate::kmeans::{
    Combiner, KmeansConfig, KmeansError, KmeansReport, Local, Whole, decode, encode, first_centres,
    fit, setup, stripe,
};

/// Clusters the records of the shared file `path` (collective over `ctx`'s section). Every
/// process returns the same figures; `run` holds this process's passes only.
pub fn kmeans(
    ctx: &mut Ctx,
    path: &Path,
    config: &KmeansConfig,
    pipeline: &Pipeline,
    budget: &Budget,
) -> Result<KmeansReport, KmeansError> {
    let (rank, p) = (ctx.pid() as usize, ctx.nprocs() as usize);
    // Round 1: every process opens the file; rank 0 also chooses the first centres.
    let opened = setup(path, config, budget).and_then(|(m, state)| {
        let centres = if rank == 0 { first_centres(&m, config, budget)? } else { Vec::new() };
        Ok((m, state, centres))
    });
    let (payload, opened) = match opened {
        Ok((m, state, centres)) => {
            let bytes = centres.iter().flat_map(|c| c.to_bits().to_le_bytes()).collect();
            (Ok(bytes), Some((m, state)))
        }
        Err(e) => (Err(e), None),
    };
    let records = agree(ctx, payload)?;
    let (m, _state) = opened.expect("agree returned Ok");
    let centres: Vec<f64> = records[0]
        .chunks_exact(8)
        .map(|w| f64::from_bits(u64::from_le_bytes(w.try_into().expect("8 bytes"))))
        .collect();
    let mine = stripe(&m, pipeline.block_size(), rank, p);
    let want_labels = config.labels.is_some();
    let _labels_memory = if want_labels {
        let all = if rank == 0 { m.n } else { mine.len / m.record_bytes() };
        Some(budget.reserve("the k-means labels", all * 4 * 2)?)
    } else {
        None
    };
    let mut labels = Vec::new();
    let report = fit(&m, config, centres, mine, pipeline, budget, &mut Ranks(ctx), |l| {
        if want_labels {
            labels.extend(l.iter().flat_map(|j| j.to_le_bytes()));
        }
    })?;
    let report = sum_assigned(ctx, report)?;
    if let Some(target) = &config.labels {
        let (all, _) = gather_varied(ctx, 0, &labels).map_err(Error::from)?;
        drop(labels);
        let written = if rank == 0 { write_labels(target, m.n, &all) } else { Ok(()) };
        agree(ctx, written.map(|()| Vec::new()))?;
    }
    Ok(report)
}

/// Every iteration's `assigned` summed over the ranks (each counts the records it assigned in
/// full), so the report is the one a single process prints over the same records: the bounds
/// are per record, so the sum is exact.
pub(super) fn sum_assigned(
    ctx: &mut Ctx,
    mut report: KmeansReport,
) -> Result<KmeansReport, KmeansError> {
    let mine = report.history.iter().flat_map(|i| i.assigned.to_le_bytes()).collect();
    let all = agree(ctx, Ok(mine))?;
    for (i, it) in report.history.iter_mut().enumerate() {
        it.assigned = all
            .iter()
            .map(|r| {
                r.get(8 * i..8 * i + 8)
                    .map_or(0, |w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
            })
            .sum();
    }
    Ok(report)
}

/// Writes `labels` (little-endian i32) as an `(n,)` int32 `.npy` at `target`, atomically.
pub(super) fn write_labels(target: &Path, n: u64, labels: &[u8]) -> Result<(), KmeansError> {
    let write_err = |e| KmeansError::Write { path: target.to_path_buf(), source: e };
    let mut out = OutputFile::create(target).map_err(write_err)?;
    out.write_all(&sluice_io::npy_header("'<i4'", &[n], false)).map_err(write_err)?;
    out.write_all(labels).map_err(write_err)?;
    out.commit().map_err(write_err)
}

/// The ranks of the section, combining each pass by one allgather of their tree nodes.
pub(super) struct Ranks<'a>(pub(super) &'a mut Ctx);

impl Combiner for Ranks<'_> {
    fn combine(
        &mut self,
        local: Result<Local, KmeansError>,
        k: usize,
    ) -> Result<Whole, KmeansError> {
        let records = agree(self.0, local.map(|l| encode(&l)))?;
        let mut whole = Whole::new(k);
        records.iter().for_each(|r| whole.add(decode(r, k)));
        Ok(whole)
    }
}

/// Allgathers every process's `Ok` payload; if any process has an `Err`, every process returns
/// an error: its own inside [`KmeansError::OnRank`], or [`KmeansError::PeerFailed`] naming the
/// lowest failed rank (`dist` rule 3; `exchange::agree` for [`KmeansError`]).
pub(super) fn agree(
    ctx: &mut Ctx,
    mine: Result<Vec<u8>, KmeansError>,
) -> Result<Vec<Vec<u8>>, KmeansError> {
    let rank = ctx.pid() as usize;
    let record = match &mine {
        Ok(bytes) => [&[0u8][..], bytes].concat(),
        Err(e) => [&[1u8][..], error_chain(e).as_bytes()].concat(),
    };
    let records = allgather_varied(ctx, &record).map_err(Error::from)?;
    mine.map_err(|e| KmeansError::OnRank { rank, source: Box::new(e) })?;
    if let Some((peer, r)) = records.iter().enumerate().find(|(_, r)| r.first() == Some(&1)) {
        let message = String::from_utf8_lossy(&r[1..]).into_owned();
        return Err(KmeansError::PeerFailed { rank: peer, message });
    }
    Ok(records.into_iter().map(|mut r| r.split_off(1)).collect())
}

#[cfg(test)]
mod tests {
    //! On the threads backend (each BSP process a thread with its own pipeline): the result
    //! equals one process's bit for bit, and a failure on one process fails all of them.

    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    use rand::{Rng, SeedableRng};
    use sluice_bsp::{Args, ExecConfig, exec_with};
    use sluice_io::{Budget, PipelineBuilder};

    use super::kmeans;
    use crate::kmeans::{Init, KmeansConfig, KmeansReport};
    use crate::{Dtype, Endian, Scalar};

    fn pipeline() -> Pipeline {
        PipelineBuilder::new().block_size(4096).build().unwrap()
    }
    use sluice_io::Pipeline;

    /// What must agree bitwise: centres, counts, inertia, every iteration's figures.
    fn key(r: &KmeansReport) -> String {
        let h: Vec<_> = r.history.iter().map(|i| (i.inertia, i.shift, i.relocated)).collect();
        format!("{:?} {:?} {:?} {:?} {:?}", r.centres, r.counts, r.inertia.to_bits(), h, r.stop)
    }

    fn run(p: u32, path: &Path, config: &KmeansConfig) -> Vec<Result<String, String>> {
        let out = Mutex::new(vec![None; p as usize]);
        exec_with(
            &ExecConfig::new(p, true),
            p,
            |ctx, s, _, _| {
                let r = kmeans(ctx, path, config, &pipeline(), &Budget::unlimited());
                let r = r.map(|rep| key(&rep)).map_err(|e| {
                    let mut text = e.to_string();
                    let mut source = std::error::Error::source(&e);
                    while let Some(c) = source {
                        text = format!("{text}: {c}");
                        source = c.source();
                    }
                    text
                });
                out.lock().unwrap()[s as usize] = Some(r);
            },
            Args::none(),
        )
        .unwrap();
        out.into_inner().unwrap().into_iter().map(Option::unwrap).collect()
    }

    /// `n` records of `d` values in blobs around `k` centres, with wide magnitudes.
    fn write(path: &Path, n: usize, d: usize, scalar: Scalar, seed: u64) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let centres: Vec<f64> = (0..5 * d).map(|_| rng.gen_range(-50.0..50.0)).collect();
        let dtype = Dtype::new(scalar, Endian::Little);
        let mut bytes = crate::npy::write_header(dtype, &[n as u64, d as u64], false);
        for i in 0..n {
            for f in 0..d {
                let x = centres[(i % 5) * d + f] + rng.r#gen::<f64>() * 3.0;
                match scalar {
                    Scalar::F32 => bytes.extend((x as f32).to_le_bytes()),
                    _ => bytes.extend(x.to_le_bytes()),
                }
            }
        }
        std::fs::write(path, bytes).unwrap();
    }

    fn config(k: usize, labels: Option<PathBuf>) -> KmeansConfig {
        KmeansConfig { k, max_iter: 15, threshold: 0.0, labels, ..KmeansConfig::default() }
    }

    #[test]
    fn ranks_equal_one_process_bit_for_bit_labels_included() {
        let dir = tempfile::tempdir().unwrap();
        // Records of 24 and 20 bytes: stripes must find read boundaries that are record
        // boundaries; 3001 and 4003 records make 18 and 20 reads of 4096 bytes.
        for (d, scalar, n) in [(3, Scalar::F64, 3001), (5, Scalar::F32, 4003)] {
            let path = dir.path().join(format!("x{d}.npy"));
            write(&path, n, d, scalar, d as u64);
            let one = dir.path().join("one.npy");
            let single = crate::kmeans::kmeans(
                &path,
                &config(7, Some(one.clone())),
                &pipeline(),
                &Budget::unlimited(),
            )
            .unwrap();
            let want = key(&single);
            for p in 1..=5 {
                let labels = dir.path().join(format!("l{p}.npy"));
                for got in run(p, &path, &config(7, Some(labels.clone()))) {
                    assert_eq!(got.unwrap(), want, "d = {d}, p = {p}");
                }
                let same = std::fs::read(&labels).unwrap() == std::fs::read(&one).unwrap();
                assert!(same, "labels, d = {d}, p = {p}");
            }
        }
    }

    #[test]
    fn empty_clusters_take_the_globally_farthest_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npy");
        write(&path, 3001, 3, Scalar::F64, 9);
        // Three centres far from every record: empty after the first pass, relocated.
        let init = dir.path().join("init.npy");
        let dtype = Dtype::new(Scalar::F64, Endian::Little);
        let mut bytes = crate::npy::write_header(dtype, &[6, 3], false);
        let init_values: [f64; 18] = [
            0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 9e3, 9e3, 9e3, -9e3, 9e3, 0.0, 0.0, 0.0, 9e3, 2.0, 2.0,
            2.0,
        ];
        for v in init_values {
            bytes.extend(v.to_le_bytes());
        }
        std::fs::write(&init, bytes).unwrap();
        let config = KmeansConfig { init: Init::File(init), ..config(6, None) };
        let single =
            crate::kmeans::kmeans(&path, &config, &pipeline(), &Budget::unlimited()).unwrap();
        assert!(single.history[0].relocated >= 3, "the test must relocate");
        for p in 2..=4 {
            for got in run(p, &path, &config) {
                assert_eq!(got.unwrap(), key(&single), "p = {p}");
            }
        }
    }

    #[test]
    fn a_nan_in_one_stripe_fails_every_rank_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npy");
        write(&path, 3001, 3, Scalar::F64, 4);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.len() - 24 * 100;
        bytes[at..at + 8].copy_from_slice(&f64::NAN.to_le_bytes());
        std::fs::write(&path, bytes).unwrap();
        for got in run(3, &path, &config(4, None)) {
            let e = got.unwrap_err();
            assert!(e.contains("x.npy") && e.contains("record 2901"), "{e}");
        }
        // A file one rank cannot read as asked: every rank fails, the failing rank named.
        let config = KmeansConfig { dims: Some(4), ..config(4, None) };
        let errors: Vec<String> =
            run(3, &path, &config).into_iter().map(Result::unwrap_err).collect();
        assert!(errors.iter().all(|e| e.contains("x.npy") && e.contains("rank")), "{errors:?}");
    }
}
