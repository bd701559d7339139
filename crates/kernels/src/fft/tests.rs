use super::*;

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
    for k in 0..=10 {
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
