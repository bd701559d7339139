//! The root's processor count and `lpf_probe`'s cost functions.
//!
//! # Contract
//! 1. `LPF_MAX_PROCS` (a positive integer) is the number of processors of `LPF_ROOT`, so the
//!    number of processes `lpf_exec(LPF_ROOT, LPF_MAX_P, …)` starts. Unset, empty or not a
//!    positive integer: sluice-bsp's default (`SLUICE_BSP_MAX_P`, else the hardware threads).
//! 2. `LPF_MAX_SECONDS_FOR_PROBE` > 0 allows `lpf_probe` to measure: g and ℓ come from
//!    sluice-bsp's process-wide cost table (the stored table of `sluice bsp bench` if there is
//!    one, else a measurement of about 0.1 s done once per OS process). Both are > 0.
//! 3. Unset, empty, 0 or unparsable: `lpf_probe` measures nothing; g and ℓ come from the stored
//!    table if one exists, else they are 0 (as LPF reports for an unprobed machine).
//! 4. An installed engine that sets a cost table (`engine` rule 3) replaces rules 2 and 3: g
//!    and ℓ come from its table, and `lpf_probe` measures nothing. Its `root_p` replaces rule 1.
//! 5. g and ℓ are pure functions of their arguments and of one table loaded once per OS
//!    process, so all processes see bitwise identical results. The sync attribute is ignored:
//!    a non-default attribute never costs more than the default.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

use sluice_bsp::ExecConfig;
use sluice_bsp::probe::{self, CostTable};

use crate::consts::{CostFn, LpfPid, LpfSyncAttr};

/// Rule 1: processors of the root.
pub(crate) fn root_p() -> LpfPid {
    let from_env = std::env::var("LPF_MAX_PROCS")
        .ok()
        .and_then(|v| v.trim().parse::<LpfPid>().ok())
        .filter(|&n| n > 0);
    if let Some(p) = crate::engine::installed().and_then(|e| e.root_p()) {
        return p;
    }
    let config = ExecConfig::default();
    from_env.unwrap_or_else(|| config.root_p())
}

/// Options for an exec from the root: rule 1, and sluice-bsp's default backend choice.
pub(crate) fn root_config(max_p: LpfPid) -> ExecConfig {
    ExecConfig { max_p: Some(max_p), ..ExecConfig::default() }
}

/// Returns true if and only if `LPF_MAX_SECONDS_FOR_PROBE` allows measuring (rule 2).
fn may_measure() -> bool {
    std::env::var("LPF_MAX_SECONDS_FOR_PROBE")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .is_some_and(|s| s > 0.0)
}

/// The g and ℓ functions `lpf_probe` hands out now (rules 2 and 3).
pub(crate) fn cost_functions() -> (CostFn, CostFn) {
    if crate::engine::installed().and_then(|e| e.cost_table()).is_some() {
        (stored_g, stored_l)
    } else if may_measure() {
        // Load (or measure) now, inside lpf_probe, where LPF allows the time to be spent,
        // rather than on the first call of g or l.
        let _ = probe::cost_table();
        (measured_g, measured_l)
    } else {
        (stored_g, stored_l)
    }
}

/// Rule 3: the table written by `sluice bsp bench`, if any; loaded once.
fn stored_table() -> Option<&'static CostTable> {
    static STORED: OnceLock<Option<CostTable>> = OnceLock::new();
    if let Some(table) = crate::engine::installed().and_then(|e| e.cost_table()) {
        return table;
    }
    STORED
        .get_or_init(|| {
            CostTable::default_path()
                .and_then(|path| CostTable::load(&path).ok())
                .filter(|t| !t.points.is_empty())
        })
        .as_ref()
}

/// Evaluates `f`, turning a panic into 0 (no panic crosses into C).
fn no_panic(f: impl FnOnce() -> f64) -> f64 {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(0.0)
}

extern "C" fn measured_g(p: LpfPid, min_msg_size: usize, _attr: LpfSyncAttr) -> f64 {
    no_panic(|| probe::g(p, min_msg_size))
}

extern "C" fn measured_l(p: LpfPid, min_msg_size: usize, _attr: LpfSyncAttr) -> f64 {
    no_panic(|| probe::l(p, min_msg_size))
}

extern "C" fn stored_g(p: LpfPid, min_msg_size: usize, _attr: LpfSyncAttr) -> f64 {
    no_panic(|| stored_table().map_or(0.0, |t| t.g(p, min_msg_size)))
}

extern "C" fn stored_l(p: LpfPid, min_msg_size: usize, _attr: LpfSyncAttr) -> f64 {
    no_panic(|| stored_table().map_or(0.0, |t| t.l(p, min_msg_size)))
}
