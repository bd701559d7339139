//! Supersteps of many tiny messages on the threads backend, as LPF's
//! `tests/performance/alltoall.c` times them: every process puts `--msgs` one-byte messages per
//! superstep, round-robin over the other processes, then syncs. Prints, per pattern, the median
//! and p90 of the per-superstep time over `--steps` supersteps (timed on process 0, after a
//! warm-up), with the load average, so that two builds can be compared run against run, and
//! the heap allocations per timed superstep (all threads; 0 means the queues are recycled).
//!
//! `cargo run -p sluice-bsp --release --example tiny_alltoall -- [--p 2] [--msgs 300]
//! [--steps 20000] [--runs 1]`

use std::sync::atomic::Ordering;
use std::time::Instant;

use sluice_bsp::{Args, ExecConfig, exec_with};

/// A global allocator that counts allocations (and otherwise is the system allocator).
mod counting_alloc {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicU64, Ordering};

    pub(crate) static ALLOCS: AtomicU64 = AtomicU64::new(0);

    pub(crate) struct Counting;

    // SAFETY: every method forwards to `System` with the caller's arguments unchanged, so
    // `System`'s guarantees are kept; the counter is a side effect only.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
            // SAFETY: forwarded contract of `GlobalAlloc::alloc`.
            unsafe { System.alloc(layout) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: forwarded contract; `ptr` came from `System` (all allocations do).
            unsafe { System.dealloc(ptr, layout) }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
            // SAFETY: forwarded contract of `GlobalAlloc::realloc`.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }
}

#[global_allocator]
static ALLOC: counting_alloc::Counting = counting_alloc::Counting;

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse().unwrap_or_else(|_| panic!("{name} wants a number, got {v}")))
        .unwrap_or(default)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// Median and p90 (µs) of `steps` supersteps of `msgs` puts of `size` bytes per process, and
/// the allocations per timed superstep.
fn pattern(p: u32, msgs: usize, size: usize, steps: usize) -> (f64, f64, f64) {
    let times = std::sync::Mutex::new(Vec::new());
    let allocs = std::sync::atomic::AtomicU64::new(0);
    exec_with(
        &ExecConfig::new(p, false),
        p,
        |ctx, s, p, _| {
            ctx.resize_memory_register(2).unwrap();
            ctx.resize_message_queue(2 * msgs + 2).unwrap();
            ctx.sync().unwrap();
            let src = ctx.alloc_local(msgs * size.max(1)).unwrap();
            let dst = ctx.alloc_global(msgs * size.max(1) * p as usize).unwrap();
            ctx.sync().unwrap();
            let mut local = Vec::with_capacity(steps);
            let mut before = 0;
            for step in 0..steps + steps / 10 {
                if step == steps / 10 {
                    before = counting_alloc::ALLOCS.load(Ordering::Relaxed);
                }
                let t = Instant::now();
                for i in 0..msgs {
                    let peer = if p == 1 { 0 } else { (s + 1 + (i as u32 % (p - 1))) % p };
                    let at = (s as usize * msgs + i) * size;
                    ctx.put(src, i * size, peer, dst, at, size).unwrap();
                }
                ctx.sync().unwrap();
                if step >= steps / 10 {
                    local.push(t.elapsed().as_secs_f64() * 1e6);
                }
            }
            if s == 0 {
                let after = counting_alloc::ALLOCS.load(Ordering::Relaxed);
                allocs.store(after - before, Ordering::Relaxed);
                *times.lock().unwrap() = local;
            }
        },
        Args::none(),
    )
    .unwrap();
    let mut t = times.into_inner().unwrap();
    t.sort_by(f64::total_cmp);
    let at = |q: f64| t[((t.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.9), allocs.into_inner() as f64 / steps as f64)
}

fn main() {
    let p = arg("--p", 2) as u32;
    let msgs = arg("--msgs", 300);
    let steps = arg("--steps", 20000);
    let runs = arg("--runs", 1);
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("# p={p} steps={steps} cores={cores} load average {}", loadavg());
    println!("{:<24} {:>12} {:>12} {:>12}", "pattern", "median (us)", "p90 (us)", "allocs/step");
    for _ in 0..runs {
        for (name, m, size) in [
            ("empty sync", 0, 1),
            (&*format!("{msgs} x 1 B all-to-all"), msgs, 1),
            ("8 x 1000 B", 8, 1000),
        ] {
            let (med, p90, allocs) = pattern(p, m, size, steps);
            println!("{name:<24} {med:>12.3} {p90:>12.3} {allocs:>12.3}");
        }
    }
    println!("# load average after: {}", loadavg());
}
