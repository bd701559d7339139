use super::*;
use sluice_bsp::{Args, ExecConfig, Pid};

fn naive(x: &[Complex64], direction: Direction) -> Vec<Complex64> {
    let n = x.len();
    (0..n)
        .map(|k| {
            let sum: Complex64 = x
                .iter()
                .enumerate()
                .map(|(j, &v)| {
                    // (j·k) mod n keeps the angle small and exact.
                    let e = (j * k) % n;
                    let a = direction.sign() * std::f64::consts::TAU * e as f64 / n as f64;
                    v * Complex64::new(a.cos(), a.sin())
                })
                .sum();
            if direction == Direction::Inverse { sum / n as f64 } else { sum }
        })
        .collect()
}

fn rel_l2(a: &[Complex64], b: &[Complex64]) -> f64 {
    let num: f64 = a.iter().zip(b).map(|(x, y)| (x - y).norm_sqr()).sum();
    let den: f64 = b.iter().map(|y| y.norm_sqr()).sum();
    (num / den).sqrt()
}

fn random(n: usize, seed: u64) -> Vec<Complex64> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| Complex64::new(rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0))).collect()
}

#[test]
fn rule1_matches_a_naive_dft_for_every_valid_p() {
    // Up to 2^12: p = 2 then combines 4 tiles of `spmd::TILE` columns per process.
    for k in 0..=12 {
        let n = 1usize << k;
        let x = random(n, k as u64);
        for direction in [Direction::Forward, Direction::Inverse] {
            let want = naive(&x, direction);
            let mut p = 1;
            while p * p <= n {
                let plan = Fft::new(n, p, direction).unwrap();
                let mut got = vec![Complex64::default(); n];
                plan.process(&x, &mut got).unwrap();
                let err = rel_l2(&got, &want);
                assert!(err < 1e-12, "n {n} p {p} {direction:?}: relative L2 error {err}");
                p *= 2;
            }
        }
    }
}

#[test]
fn rule3_fft_spmd_takes_cyclic_input_and_gives_block_cyclic_output() {
    let (n, p) = (1usize << 8, 4usize);
    let x = random(n, 7);
    let want = naive(&x, Direction::Forward);
    let plan = LocalFft::new(n, p, Direction::Forward).unwrap();
    let (m, b) = (n / p, n / p / p);
    let outs = Mutex::new(vec![Vec::new(); p]);
    // The caller's own section, with registrations and capacity of its own that the FFT must
    // leave alone (it runs in a rehooked context).
    sluice_bsp::exec_with(
        &ExecConfig::new(p as Pid, false),
        p as Pid,
        |ctx, s, _, _| {
            ctx.resize_memory_register(1).unwrap();
            ctx.resize_message_queue(1).unwrap();
            ctx.sync().unwrap();
            let mine = ctx.alloc_global(8).unwrap();
            let s = s as usize;
            let mut local: Vec<Complex64> = (0..m).map(|l| x[s + p * l]).collect();
            let mut out = vec![Complex64::default(); m];
            fft_spmd(ctx, &plan, &mut local, &mut out).unwrap();
            assert_eq!((ctx.registered(), ctx.msg_capacity()), (1, 1));
            ctx.slot_mut(mine).unwrap()[0] = 1;
            ctx.sync().unwrap();
            outs.lock().unwrap()[s] = out;
        },
        Args::none(),
    )
    .unwrap();
    let outs = outs.into_inner().unwrap();
    for (s, out) in outs.iter().enumerate() {
        for k2 in 0..p {
            for q in 0..b {
                let (got, want) = (out[k2 * b + q], want[m * k2 + s * b + q]);
                assert!((got - want).norm() < 1e-9, "s {s} k2 {k2} q {q}: {got} vs {want}");
            }
        }
    }
}

#[test]
fn rule2_bad_shapes_are_refused() {
    assert!(matches!(Fft::new(12, 1, Direction::Forward), Err(Error::NotPowerOfTwo { n: 12 })));
    assert!(matches!(Fft::new(16, 8, Direction::Forward), Err(Error::BadProcs { .. })));
    assert!(matches!(Fft::new(64, 3, Direction::Forward), Err(Error::BadProcs { .. })));
    assert!(matches!(Fft::new(0, 1, Direction::Forward), Err(Error::NotPowerOfTwo { n: 0 })));
    let plan = Fft::new(16, 2, Direction::Forward).unwrap();
    let err = plan.process(&[Complex64::default(); 8], &mut [Complex64::default(); 16]);
    assert!(matches!(err, Err(Error::Length { what: "input", expected: 16, got: 8 })));
    let fits = |n: usize, p: usize| check_shape(n, p).is_ok() && n / p >= MIN_VALUES_PER_PROCESS;
    for (n, max_p) in [(16, 64), (1 << 18, 2), (1 << 19, 2), (1 << 20, 6), (1 << 26, 64), (2, 8)] {
        let p = default_procs(n, max_p);
        assert!(p == 1 || (fits(n, p) && p <= max_p), "n {n} max_p {max_p}: p {p}");
        assert!(2 * p > max_p || !fits(n, 2 * p), "n {n} max_p {max_p}: p {p} is not the largest");
    }
    assert_eq!((default_procs(1 << 19, 2), default_procs(1 << 18, 2)), (2, 1));
}

#[test]
fn in_place_fft_then_ifft_round_trips() {
    let x = random(1 << 12, 9);
    let mut y = x.clone();
    fft(&mut y, 4).unwrap();
    assert!(rel_l2(&y, &naive(&x, Direction::Forward)) < 1e-12);
    ifft(&mut y, 2).unwrap();
    assert!(rel_l2(&y, &x) < 1e-12);
}

#[test]
fn rule6_candidates_are_valid_and_the_fastest_is_one_of_them() {
    assert_eq!(candidate_procs(PROBE_MAX * 2, 2), vec![default_procs(PROBE_MAX * 2, 2)]);
    assert_eq!(candidate_procs(1 << 16, 2), vec![1, 2]);
    assert_eq!(candidate_procs(1 << 16, 8), vec![1, 2, 4, 8]);
    assert_eq!(candidate_procs(1 << 12, 8), vec![1]);
    for (n, max_p) in [(1usize << 13, 4), (1 << 16, 2), (1 << 18, 64)] {
        for p in candidate_procs(n, max_p) {
            assert!(check_shape(n, p).is_ok() && p <= max_p, "n {n}: p {p}");
        }
    }
    let n = 1 << 13;
    let x = random(n, 5);
    let plans: Vec<Fft> = candidate_procs(n, 4)
        .into_iter()
        .map(|p| Fft::new(n, p, Direction::Forward).unwrap())
        .collect();
    let mut out = vec![Complex64::default(); n];
    let best = fastest(&plans, &x, &mut out, std::time::Duration::from_millis(4)).unwrap();
    assert!(best < plans.len());
    // What a probe leaves in `output` is the transform (every candidate computes it).
    assert!(rel_l2(&out, &naive(&x, Direction::Forward)) < 1e-12);
}

#[test]
fn rule6_the_probe_keeps_more_processes_only_within_its_margin() {
    let m = PROBE_PREFER_PARALLEL;
    // p = 2 a little slower than p = 1 in the probe (its cold calls): p = 2.
    assert_eq!(prefer_parallel([(1, 3.3e-3), (2, 3.3e-3 * m * 0.99)].into_iter()), 1);
    // p = 2 slower by more than the margin (a loaded machine): p = 1.
    assert_eq!(prefer_parallel([(1, 3.5e-3), (2, 6.8e-3)].into_iter()), 0);
    // The fastest plan is kept whatever its p when nothing larger is within the margin.
    assert_eq!(prefer_parallel([(1, 9.0), (2, 1.0), (4, 1.0 * m * 1.01)].into_iter()), 1);
    // Of several within the margin, the most processes; the order of the plans does not matter.
    assert_eq!(prefer_parallel([(4, 1.2), (1, 1.0), (2, 1.1)].into_iter()), 0);
}

/// The four-step transform of `x` by `plan`, on a section of the plan's p threads.
fn four_step(plan: &fourstep::FourStep, x: &[Complex64]) -> Vec<Complex64> {
    let (n, p) = (x.len(), plan.p);
    let section = section::Section::new(p).unwrap();
    let mut bufs: Vec<spmd::Workspace> = (0..p).map(|_| Default::default()).collect();
    let (mut m, mut got) = (vec![Complex64::default(); n], vec![Complex64::default(); n]);
    shared::run_four_step(plan, &section, &mut bufs, &mut m, x, &mut got, None).unwrap();
    got
}

#[test]
fn four_step_matches_a_naive_dft_for_every_valid_p() {
    for k in 0..=11 {
        let n = 1usize << k;
        let x = random(n, 100 + k as u64);
        for direction in [Direction::Forward, Direction::Inverse] {
            let want = naive(&x, direction);
            let mut p = 1;
            while p * p <= n {
                let got = four_step(&fourstep::FourStep::new(n, p, direction).unwrap(), &x);
                let err = rel_l2(&got, &want);
                assert!(err < 1e-12, "n {n} p {p} {direction:?}: relative L2 error {err}");
                p *= 2;
            }
        }
    }
}

#[test]
fn four_step_matches_rustfft_where_each_thread_has_several_blocks() {
    // From 2^13 on, `M` has more blocks of columns (`fourstep` rule 4) than threads, and a
    // thread's rows span several groups; rustfft alone (p = 1 below `FOUR_STEP_MIN`) is the
    // reference.
    for k in [13, 14, 16] {
        let n = 1usize << k;
        let x = random(n, 200 + k as u64);
        for direction in [Direction::Forward, Direction::Inverse] {
            let mut want = vec![Complex64::default(); n];
            Fft::new(n, 1, direction).unwrap().process(&x, &mut want).unwrap();
            for p in [1, 2, 4] {
                let plan = fourstep::FourStep::new(n, p, direction).unwrap();
                let (n1, n2) = plan.shape();
                // At 2^16 every p here has at least 2 blocks per thread.
                assert!(n2 / plan.width() >= p * if k == 16 { 2 } else { 1 }, "n {n} p {p}");
                assert!(n1 / p > 1, "n {n} p {p}");
                let err = rel_l2(&four_step(&plan, &x), &want);
                assert!(err < 1e-14, "n {n} p {p} {direction:?}: relative L2 error {err}");
            }
        }
    }
}

/// `simd` rule 1: the portable loops (forced on this thread) and the AVX2 and FMA loops (where
/// the CPU runs them) give the same transforms within a few ulps, both against rustfft alone,
/// for the p = 2 plan (`shared`) and the four-step at p = 1 and 2, both directions, odd and
/// even powers of two.
#[test]
fn the_portable_and_the_simd_loops_give_the_same_transforms() {
    let simd = crate::cpu::Avx2Fma::detect().is_some();
    for k in [4, 7, 12, 13, 16] {
        let n = 1usize << k;
        let x = random(n, 300 + k as u64);
        for direction in [Direction::Forward, Direction::Inverse] {
            let mut want = vec![Complex64::default(); n];
            Fft::new(n, 1, direction).unwrap().process(&x, &mut want).unwrap();
            let mut got = Vec::new();
            for portable in [true, false] {
                simd::PORTABLE.with(|c| c.set(portable));
                let plan = LocalFft::new(n, 2, direction).unwrap();
                let four = fourstep::FourStep::new(n, 2, direction).unwrap();
                assert_eq!(plan.simd.is_some(), simd && !portable);
                assert_eq!(four.simd.is_some(), simd && !portable);
                let section = section::Section::new(2).unwrap();
                let mut bufs: Vec<spmd::Workspace> = (0..2).map(|_| Default::default()).collect();
                let (mut lanes, mut y) =
                    (vec![Complex64::default(); n], vec![Complex64::default(); n]);
                shared::run(&plan, &section, &mut bufs, &mut lanes, &x, &mut y, None).unwrap();
                let four1 = fourstep::FourStep::new(n, 1, direction).unwrap();
                got.push([y, four_step(&four, &x), four_step(&four1, &x)]);
            }
            simd::PORTABLE.with(|c| c.set(false));
            for (i, (a, b)) in got[0].iter().zip(&got[1]).enumerate() {
                let what = ["p = 2", "four-step p = 2", "four-step p = 1"][i];
                let (ea, eb) = (rel_l2(a, &want), rel_l2(b, &want));
                assert!(ea < 1e-14 && eb < 1e-14, "n {n} {direction:?} {what}: {ea} {eb}");
                assert!(rel_l2(a, b) < 1e-14, "n {n} {direction:?} {what}: the two differ");
            }
        }
    }
}

/// `shared::run` with several lanes per thread (p lanes on q threads, `lanes_for`) gives the
/// DFT, with the portable and the SIMD loops (the 4- and 8-row combines run in registers),
/// both directions; and the plans `Fft::new` makes at 2^18 and 2^21 on 2 threads give
/// rustfft's and the four-step's results.
#[test]
fn several_lanes_per_thread_give_the_dft() {
    for k in [4, 6, 9, 12] {
        let n = 1usize << k;
        let x = random(n, 500 + k as u64);
        for direction in [Direction::Forward, Direction::Inverse] {
            let want = naive(&x, direction);
            for portable in [true, false] {
                simd::PORTABLE.with(|c| c.set(portable));
                for (v, q) in [(4, 1), (4, 2), (8, 2), (8, 4), (4, 4), (16, 2)] {
                    if v * v > n {
                        continue;
                    }
                    let plan = LocalFft::new(n, v, direction).unwrap();
                    let section = section::Section::new(q).unwrap();
                    let mut bufs: Vec<spmd::Workspace> =
                        (0..q).map(|_| Default::default()).collect();
                    let (mut lanes, mut y) =
                        (vec![Complex64::default(); n], vec![Complex64::default(); n]);
                    shared::run(&plan, &section, &mut bufs, &mut lanes, &x, &mut y, None).unwrap();
                    let err = rel_l2(&y, &want);
                    assert!(
                        err < 1e-12,
                        "n {n} {v} lanes on {q} threads {direction:?} portable {portable}: {err}"
                    );
                }
            }
            simd::PORTABLE.with(|c| c.set(false));
        }
    }
    // By receiver, which lanes a thread takes follows the input's alignment (`shared`): inputs
    // starting on each of the four values of a cache line.
    let n = 1usize << 12;
    let x = random(n + 5, 510);
    for at in 0..4 {
        let input = &x[at..at + n];
        let want = naive(input, Direction::Forward);
        for (v, q) in [(8, 2), (4, 1)] {
            let plan = LocalFft::new(n, v, Direction::Forward).unwrap();
            let section = section::Section::new(q).unwrap();
            let mut bufs: Vec<spmd::Workspace> = (0..q).map(|_| Default::default()).collect();
            let (mut lanes, mut y) = (vec![Complex64::default(); n], vec![Complex64::default(); n]);
            shared::run(&plan, &section, &mut bufs, &mut lanes, input, &mut y, None).unwrap();
            let err = rel_l2(&y, &want);
            assert!(err < 1e-12, "input at value {at}, {v} lanes on {q} threads: {err}");
        }
    }
    let n = 1usize << 18;
    // `simd::detect`, as `lanes_for` sees it (`SLUICE_FFT_BASELINE=1` turns the kernels off).
    // `SLUICE_FFT_LANES` (a benchmark's setting) leaves the lane counts to whoever set it.
    let set = std::env::var_os("SLUICE_FFT_LANES").is_some();
    let simd = simd::detect().is_some();
    for k in 16..=22 {
        assert!(set || lanes_for(1 << k, 2) == if simd { 8 } else { 2 }, "2^{k}");
    }
    assert!(set || (lanes_for(1 << 15, 2), lanes_for(n, 4)) == (2, 4));
    // 2^18 on 2 threads against rustfft alone; 2^21 (8 lanes of 2^18, not the four-step,
    // `FOUR_STEP_MIN_LANES`) against the four-step plan of p = 1.
    for n in [n, 1 << 21] {
        let x = random(n, 600);
        for direction in [Direction::Forward, Direction::Inverse] {
            let (mut want, mut got) =
                (vec![Complex64::default(); n], vec![Complex64::default(); n]);
            Fft::new(n, 1, direction).unwrap().process(&x, &mut want).unwrap();
            let plan = Fft::new(n, 2, direction).unwrap();
            assert_eq!(plan.procs(), 2);
            let lanes = match &plan.kind {
                Kind::Parallel(local, _) => local.p,
                _ => 0,
            };
            let want_lanes = if simd {
                8
            } else if n < FOUR_STEP_MIN {
                2
            } else {
                0
            };
            assert!(set || lanes == want_lanes, "n {n}: {plan:?}");
            plan.process(&x, &mut got).unwrap();
            let err = rel_l2(&got, &want);
            assert!(err < 1e-14, "n {n} on 2 threads {direction:?}: {err}");
        }
    }
}
