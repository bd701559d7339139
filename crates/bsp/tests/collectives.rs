//! Collectives against sequential truth, p = 1 … 9 and awkward lengths, on both backends.

mod common;

use std::sync::Mutex;

use common::{backends, run};
use sluice_bsp::Pid;
use sluice_bsp::collectives::{
    allgather, allgather_varied, allreduce, alltoall, broadcast, gather, gather_varied, reduce,
};

/// The value process `s` contributes at index `i`.
fn val(s: Pid, i: usize) -> u64 {
    u64::from(s) * 1000 + i as u64 + 1
}

/// Neither commutative nor associative: folding order is visible in the result (rule 3).
fn op(a: u64, b: u64) -> u64 {
    a.wrapping_mul(31).wrapping_add(b)
}

const PS: [Pid; 7] = [1, 2, 3, 4, 7, 9, 16];
const LENS: [usize; 5] = [0, 1, 5, 64, 1000];

#[test]
fn broadcast_copies_root_data_everywhere() {
    for config in backends() {
        for p in PS {
            run(&config, p, |ctx, s, p| {
                for n in LENS {
                    let root = (n as Pid) % p;
                    let mut data: Vec<u64> =
                        (0..n).map(|i| if s == root { val(s, i) } else { 0 }).collect();
                    broadcast(ctx, root, &mut data).unwrap();
                    assert_eq!(data, (0..n).map(|i| val(root, i)).collect::<Vec<_>>());
                }
            })
            .unwrap();
        }
    }
}

#[test]
fn gather_and_allgather_concatenate_in_pid_order() {
    for config in backends() {
        for p in PS {
            run(&config, p, |ctx, s, p| {
                for n in LENS {
                    let mine: Vec<u64> = (0..n).map(|i| val(s, i)).collect();
                    let truth: Vec<u64> =
                        (0..p).flat_map(|j| (0..n).map(move |i| val(j, i))).collect();
                    let mut out = vec![0u64; n * p as usize];
                    gather(ctx, 0, &mine, &mut out).unwrap();
                    if s == 0 {
                        assert_eq!(out, truth);
                    }
                    let mut all = vec![0u64; n * p as usize];
                    allgather(ctx, &mine, &mut all).unwrap();
                    assert_eq!(all, truth);
                }
            })
            .unwrap();
        }
    }
}

#[test]
fn allgather_and_gather_varied_return_every_record_whole_in_pid_order() {
    for config in backends() {
        for p in PS {
            run(&config, p, |ctx, s, p| {
                // Process j sends j·k bytes of value j + k: lengths differ, some are empty.
                for k in [0usize, 1, 7] {
                    let record = |j: Pid| vec![(j as usize + k) as u8; j as usize * k];
                    let all = allgather_varied(ctx, &record(s)).unwrap();
                    assert_eq!(all, (0..p).map(record).collect::<Vec<_>>());
                    let root = p - 1;
                    let (bytes, lens) = gather_varied(ctx, root, &record(s)).unwrap();
                    assert_eq!(lens, (0..p).map(|j| record(j).len()).collect::<Vec<_>>());
                    let want = if s == root { all.concat() } else { Vec::new() };
                    assert_eq!(bytes, want);
                }
            })
            .unwrap();
        }
    }
}

#[test]
fn alltoall_transposes_blocks() {
    for config in backends() {
        for p in PS {
            run(&config, p, |ctx, s, p| {
                for k in [0usize, 1, 3] {
                    let send: Vec<u32> =
                        (0..k * p as usize).map(|i| s * 10_000 + i as u32).collect();
                    let mut recv = vec![0u32; send.len()];
                    alltoall(ctx, &send, &mut recv).unwrap();
                    for j in 0..p as usize {
                        for t in 0..k {
                            let want = j as u32 * 10_000 + (s as usize * k + t) as u32;
                            assert_eq!(recv[j * k + t], want);
                        }
                    }
                }
            })
            .unwrap();
        }
    }
}

#[test]
fn reduce_and_allreduce_fold_in_pid_order() {
    for config in backends() {
        for p in PS {
            let results = Mutex::new(Vec::new());
            run(&config, p, |ctx, s, p| {
                for n in LENS {
                    let truth: Vec<u64> = (0..n)
                        .map(|i| (1..p).fold(val(0, i), |acc, j| op(acc, val(j, i))))
                        .collect();
                    let mut data: Vec<u64> = (0..n).map(|i| val(s, i)).collect();
                    reduce(ctx, 0, &mut data, op).unwrap();
                    if s == 0 {
                        assert_eq!(data, truth);
                    } else {
                        assert_eq!(data, (0..n).map(|i| val(s, i)).collect::<Vec<_>>());
                    }
                    let mut data: Vec<u64> = (0..n).map(|i| val(s, i)).collect();
                    allreduce(ctx, &mut data, op).unwrap();
                    assert_eq!(data, truth, "p={p} n={n}");
                    // Floating point: bitwise identical everywhere.
                    let mut f: Vec<f64> =
                        (0..n).map(|i| 0.1 * (s as f64 + 1.0) + i as f64).collect();
                    allreduce(ctx, &mut f, |a, b| a + b).unwrap();
                    results
                        .lock()
                        .unwrap()
                        .push((n, f.iter().map(|x| x.to_bits()).collect::<Vec<_>>()));
                }
            })
            .unwrap();
            let results = results.into_inner().unwrap();
            for n in LENS {
                let of_n: Vec<_> = results.iter().filter(|r| r.0 == n).collect();
                assert!(of_n.iter().all(|r| r.1 == of_n[0].1));
            }
        }
    }
}

#[test]
fn collectives_leave_capacity_and_registrations_balanced() {
    for config in backends() {
        run(&config, 4, |ctx, s, p| {
            let before = ctx.registered();
            let mut d = vec![s; 10];
            for _ in 0..20 {
                allreduce(ctx, &mut d, |a, b| a.max(b)).unwrap();
            }
            assert_eq!(d, vec![p - 1; 10]);
            assert_eq!(ctx.registered(), before);
        })
        .unwrap();
    }
}
