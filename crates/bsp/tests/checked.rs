//! The `Checked` backend catches each illegal pattern it claims to (threads/checked.rs
//! contract), and accepts the legal look-alikes.

mod common;

use common::{fits, reserve, run};
use sluice_bsp::{Error, ExecConfig};

fn checked() -> ExecConfig {
    ExecConfig::new(64, true)
}

fn is_checked(e: &Result<(), Error>) -> bool {
    matches!(e, Err(Error::Checked { .. }))
}

#[test]
fn checked_rejects_read_write_overlap_put_source_written_by_incoming_put() {
    // Process 0 puts from its slot X to 1, while 1 puts into the same bytes of 0's X.
    if !fits(2) {
        return;
    }
    let result = run(&checked(), 2, |ctx, s, _| {
        reserve(ctx, 1, 4);
        let x = ctx.alloc_global(16).unwrap();
        ctx.put(x, 0, 1 - s, x, 8, 8).unwrap();
        if s == 1 {
            ctx.put(x, 0, 0, x, 0, 8).unwrap(); // writes 0's x[0..8], which 0 reads
        }
        let r = ctx.sync();
        if s == 0 {
            assert!(is_checked(&r), "{r:?}");
        }
    });
    assert!(matches!(result, Err(Error::Checked { pid: 0, .. })), "{result:?}");
}

#[test]
fn checked_rejects_read_write_overlap_get_source_written_by_put() {
    if !fits(3) {
        return;
    }
    let result = run(&checked(), 3, |ctx, s, _| {
        reserve(ctx, 2, 6);
        let x = ctx.alloc_global(16).unwrap();
        let y = ctx.alloc_local(16).unwrap();
        match s {
            1 => ctx.get(0, x, 4, y, 0, 4).unwrap(), // reads 0's x[4..8]
            2 => ctx.put(y, 0, 0, x, 6, 4).unwrap(), // writes 0's x[6..10]
            _ => {}
        }
        let _ = ctx.sync();
    });
    assert!(matches!(result, Err(Error::Checked { pid: 0, .. })), "{result:?}");
}

#[test]
fn checked_rejects_self_overlapping_put() {
    let result = run(&checked(), 1, |ctx, _, _| {
        reserve(ctx, 1, 2);
        let x = ctx.alloc_global(16).unwrap();
        ctx.put(x, 0, 0, x, 4, 8).unwrap();
        assert!(is_checked(&ctx.sync()));
    });
    assert!(matches!(result, Err(Error::Checked { .. })));
}

#[test]
fn checked_accepts_overlapping_writes_and_adjacent_read_write() {
    if !fits(2) {
        return;
    }
    run(&checked(), 4, |ctx, s, _| {
        reserve(ctx, 2, 10);
        let x = ctx.alloc_global(16).unwrap();
        let y = ctx.alloc_local(16).unwrap();
        // Everyone writes 0's x[0..8] (CRCW, legal); 0 reads its own x[8..16] (adjacent).
        ctx.put(y, 0, 0, x, 0, 8).unwrap();
        if s == 0 {
            ctx.put(x, 8, 1, x, 8, 8).unwrap();
        }
        ctx.sync().unwrap();
    })
    .unwrap();
}

#[test]
fn checked_rejects_mismatched_global_registration() {
    if !fits(3) {
        return;
    }
    let result = run(&checked(), 3, |ctx, s, _| {
        reserve(ctx, 3, 2);
        let _a = ctx.alloc_global(8).unwrap();
        if s == 2 {
            let _b = ctx.alloc_global(8).unwrap(); // only process 2 registers a second slot
        }
        assert!(is_checked(&ctx.sync()));
    });
    assert!(matches!(result, Err(Error::Checked { .. })), "{result:?}");
}

#[test]
fn checked_rejects_global_registrations_in_different_order() {
    if !fits(2) {
        return;
    }
    let result = run(&checked(), 2, |ctx, s, _| {
        reserve(ctx, 3, 2);
        let a = ctx.alloc_global(8).unwrap();
        let b = ctx.alloc_global(8).unwrap();
        ctx.sync().unwrap();
        // Deregistration order differs: the ids freed for reuse would disagree.
        if s == 0 {
            ctx.deregister(a).unwrap();
            ctx.deregister(b).unwrap();
        } else {
            ctx.deregister(b).unwrap();
            ctx.deregister(a).unwrap();
        }
        assert!(is_checked(&ctx.sync()));
    });
    assert!(result.is_err());
}

#[test]
fn checked_accepts_local_registrations_that_differ() {
    run(&checked(), 2, |ctx, s, _| {
        reserve(ctx, 4, 2);
        if s == 0 {
            ctx.alloc_local(8).unwrap();
            ctx.alloc_local(8).unwrap();
        }
        ctx.alloc_global(8).unwrap();
        ctx.sync().unwrap();
    })
    .unwrap();
}

#[test]
fn checked_rejects_target_end_queue_overflow() {
    if !fits(3) {
        return;
    }
    let result = run(&checked(), 3, |ctx, s, _| {
        reserve(ctx, 2, 1);
        let y = ctx.alloc_local(8).unwrap();
        let x = ctx.alloc_global(8).unwrap();
        if s > 0 {
            ctx.put(y, 0, 0, x, 0, 8).unwrap(); // 0 receives 2 with capacity 1
        }
        let _ = ctx.sync();
    });
    assert!(matches!(result, Err(Error::QueueOverflow { pid: 0, .. })), "{result:?}");
}

#[test]
fn fast_path_leaves_the_same_patterns_unchecked() {
    // The fast path does not look for overlaps (documented as undefined); it must still finish.
    run(&ExecConfig::new(2, false), 2, |ctx, _, _| {
        reserve(ctx, 1, 2);
        let x = ctx.alloc_global(16).unwrap();
        ctx.put(x, 0, 0, x, 4, 8).unwrap();
        let _ = ctx.sync();
    })
    .unwrap();
}
