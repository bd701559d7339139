//! Randomised h-relations compared with a sequential model of the same puts and gets, for
//! p = 1 … 16, on both backends.
//!
//! Every process owns a global slot `A` (read-only during a superstep: the sources) and a global
//! slot `B` (the destinations). Each superstep, a seeded plan cuts every process's `B` into
//! random disjoint segments; each segment is filled either by a put from a random process's `A`
//! or by a get its owner issues from a random process's `A`. Between supersteps every process
//! rewrites its `A` with fresh seeded bytes. The model applies the same plan to plain arrays.

mod common;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sluice_bsp::{Ctx, MemSlot, Pid};

use common::{backends, reserve, run};

const A_LEN: usize = 512;
const B_LEN: usize = 768;

#[derive(Debug, Clone, Copy)]
enum Msg {
    /// `origin` puts `A[src_off..+len]` into `target`'s `B[dst_off..]`.
    Put { origin: usize, target: usize, src_off: usize, dst_off: usize, len: usize },
    /// `origin` gets `A[src_off..+len]` of `source` into its own `B[dst_off..]`.
    Get { origin: usize, source: usize, src_off: usize, dst_off: usize, len: usize },
}

fn plan(rng: &mut Xoshiro256PlusPlus, p: usize) -> Vec<Msg> {
    let mut msgs = Vec::new();
    for owner in 0..p {
        let mut at = 0;
        while at < B_LEN {
            let len = rng.gen_range(0..=64).min(B_LEN - at);
            if rng.gen_bool(0.3) {
                at += len.max(1); // a gap nobody writes
                continue;
            }
            let other = rng.gen_range(0..p);
            let src_off = rng.gen_range(0..=A_LEN - len);
            msgs.push(if rng.gen_bool(0.5) {
                Msg::Put { origin: other, target: owner, src_off, dst_off: at, len }
            } else {
                Msg::Get { origin: owner, source: other, src_off, dst_off: at, len }
            });
            at += len.max(1);
        }
    }
    // Issue order is random too.
    for i in (1..msgs.len()).rev() {
        msgs.swap(i, rng.gen_range(0..=i));
    }
    msgs
}

fn fresh_a(step: u64, pid: usize) -> Vec<u8> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(step * 1000 + pid as u64);
    (0..A_LEN).map(|_| rng.r#gen()).collect()
}

fn model_step(a: &[Vec<u8>], b: &mut [Vec<u8>], msgs: &[Msg]) {
    for m in msgs {
        match *m {
            Msg::Put { origin, target, src_off, dst_off, len } => b[target][dst_off..dst_off + len]
                .copy_from_slice(&a[origin][src_off..src_off + len]),
            Msg::Get { origin, source, src_off, dst_off, len } => b[origin][dst_off..dst_off + len]
                .copy_from_slice(&a[source][src_off..src_off + len]),
        }
    }
}

fn queue(ctx: &mut Ctx, me: usize, msgs: &[Msg], a: MemSlot, b: MemSlot) {
    for m in msgs {
        match *m {
            Msg::Put { origin, target, src_off, dst_off, len } if origin == me => {
                ctx.put(a, src_off, target as Pid, b, dst_off, len).unwrap()
            }
            Msg::Get { origin, source, src_off, dst_off, len } if origin == me => {
                ctx.get(source as Pid, a, src_off, b, dst_off, len).unwrap()
            }
            _ => {}
        }
    }
}

#[test]
fn random_h_relations_match_a_sequential_model() {
    const STEPS: u64 = 6;
    for config in backends() {
        for p in 1..=16usize {
            let seed = 0x5eed + p as u64;
            run(&config, p as Pid, |ctx, s, p| {
                // p: the processes that run (fewer than asked under mpirun -np N < p).
                let (me, p) = (s as usize, p as usize);
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
                let mut model_a: Vec<Vec<u8>> = (0..p).map(|j| fresh_a(0, j)).collect();
                let mut model_b = vec![vec![0u8; B_LEN]; p];
                // Enough for the busiest process: at most B_LEN/1 segments per owner.
                ctx.resize_memory_register(2).unwrap();
                ctx.resize_message_queue(4 * p * B_LEN).unwrap();
                ctx.sync().unwrap();
                let a = ctx.alloc_global(A_LEN).unwrap();
                let b = ctx.alloc_global(B_LEN).unwrap();
                ctx.slot_mut(a).unwrap().copy_from_slice(&model_a[me]);
                for step in 1..=STEPS {
                    let msgs = plan(&mut rng, p);
                    queue(ctx, me, &msgs, a, b);
                    assert_eq!(ctx.slot(b).unwrap(), &model_b[me][..], "changed before sync");
                    ctx.sync().unwrap();
                    model_step(&model_a, &mut model_b, &msgs);
                    assert_eq!(ctx.slot(b).unwrap(), &model_b[me][..], "p={p} step={step}");
                    model_a = (0..p).map(|j| fresh_a(step, j)).collect();
                    ctx.slot_mut(a).unwrap().copy_from_slice(&model_a[me]);
                }
            })
            .unwrap();
        }
    }
}

/// Total exchange with many small messages at p = 16 (oversubscribed), checked word by word.
#[test]
fn all_to_all_of_small_messages_is_exact() {
    for config in backends() {
        let p = 16usize;
        let per_peer = 64usize;
        run(&config, p as Pid, |ctx, s, p| {
            let (me, p) = (s as usize, p as usize);
            ctx.resize_memory_register(2).unwrap();
            ctx.resize_message_queue(2 * p * per_peer).unwrap();
            ctx.sync().unwrap();
            let src = ctx.alloc_local(8 * p * per_peer).unwrap();
            let dst = ctx.alloc_global(8 * p * per_peer).unwrap();
            for (i, w) in ctx.slot_mut(src).unwrap().chunks_exact_mut(8).enumerate() {
                w.copy_from_slice(&((me * 1_000_000 + i) as u64).to_le_bytes());
            }
            for d in 0..p {
                for k in 0..per_peer {
                    let i = d * per_peer + k;
                    ctx.put(src, 8 * i, d as Pid, dst, 8 * (me * per_peer + k), 8).unwrap();
                }
            }
            ctx.sync().unwrap();
            for (j, w) in ctx.slot(dst).unwrap().chunks_exact(8).enumerate() {
                let (from, k) = (j / per_peer, j % per_peer);
                let want = (from * 1_000_000 + me * per_peer + k) as u64;
                assert_eq!(u64::from_le_bytes(w.try_into().unwrap()), want);
            }
        })
        .unwrap();
    }
}

/// Large messages (which the MPI backend sends as messages of their own) mixed with small
/// ones, gets among them, and large writes that overlap at process 0 (whole messages in some
/// serial order): checked byte for byte against what each writer sent.
#[test]
fn large_and_small_messages_mixed_arrive_whole() {
    const BIG: usize = 300 << 10;
    for config in backends() {
        run(&config, 3, |ctx, s, p| {
            let (me, n) = (s as usize, p as usize);
            reserve(ctx, 3, 16);
            let src = ctx.alloc_global(BIG).unwrap();
            let dst = ctx.alloc_global(4 * BIG).unwrap();
            let got = ctx.alloc_local(BIG).unwrap();
            for (i, b) in ctx.slot_mut(src).unwrap().iter_mut().enumerate() {
                *b = (i * 31 + me * 7) as u8;
            }
            ctx.sync().unwrap();
            let right = (me + 1) % n;
            ctx.put(src, 0, right as Pid, dst, 0, BIG).unwrap(); // large
            ctx.put(src, 5, right as Pid, dst, BIG, 100).unwrap(); // small
            ctx.get(right as Pid, src, 1, got, 0, BIG - 1).unwrap(); // large get
            // Overlapping large writes into process 0's [2 BIG, 3.5 BIG): each whole.
            ctx.put(src, 0, 0, dst, 2 * BIG + me * (BIG / 2), BIG).unwrap();
            ctx.sync().unwrap();
            let left = (me + n - 1) % n;
            let pattern = |from: usize, i: usize| (i * 31 + from * 7) as u8;
            let d = ctx.slot(dst).unwrap();
            assert!(d[..BIG].iter().enumerate().all(|(i, &b)| b == pattern(left, i)));
            assert!(d[BIG..BIG + 100].iter().enumerate().all(|(i, &b)| b == pattern(left, i + 5)));
            let g = ctx.slot(got).unwrap();
            assert!(g[..BIG - 1].iter().enumerate().all(|(i, &b)| b == pattern(right, i + 1)));
            if me == 0 {
                // Each half-BIG block of the overlap region comes whole from one writer that
                // covers it, and a later writer's message wins all of its overlap.
                for blk in 0..n + 1 {
                    let off = 2 * BIG + blk * (BIG / 2);
                    let part = &d[off..off + BIG / 2];
                    let writer = (0..n).rev().find(|&w| {
                        let start = 2 * BIG + w * (BIG / 2);
                        off >= start
                            && off < start + BIG
                            && part
                                .iter()
                                .enumerate()
                                .all(|(i, &b)| b == pattern(w, off - start + i))
                    });
                    assert!(writer.is_some(), "block {blk} is not one writer's bytes");
                }
            }
        })
        .unwrap();
    }
}
