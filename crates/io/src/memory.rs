//! The process memory budget (`--memory`).
//!
//! # Contract
//! 1. A [`Budget`] is a byte count that caps the whole process: buffer pool, kernel state and a
//!    fixed allowance for the program itself ([`BASELINE_BYTES`]).
//! 2. Every large allocation is reserved first with [`Budget::reserve`]; a reservation over what
//!    is left is an [`Error::OverBudget`] before any work starts, never an OOM kill later.
//! 3. The default is the cgroup's memory limit when one is set (v2 `memory.max`, v1
//!    `memory.limit_in_bytes`), else [`DEFAULT_RAM_FRACTION`] of physical RAM.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::Error;

/// Bytes assumed for code, stacks, allocator slack and small state before anything is reserved.
/// Measured (issue 16 item 5): the peak RSS of `sluice` runs that reserve nothing large
/// (`graph info`, `bsp probe`, a refused `stats`) is 5.4-7.3 MiB; 16 MiB leaves twice that for
/// thread stacks and allocator slack (it was 48 MiB, a third of a 64 MiB budget).
pub const BASELINE_BYTES: u64 = 16 << 20;
/// Share of RAM used when no cgroup limit is set.
pub const DEFAULT_RAM_FRACTION: f64 = 0.5;

/// Parses `512M`, `2G`, `1.5G`, `4096` or `64KiB` into bytes (powers of 1024).
pub fn parse_size(text: &str) -> Result<u64, Error> {
    let bad = || Error::BadSize(text.to_string());
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| bad())?;
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(bad()),
    };
    let bytes = value * (1u64 << shift) as f64;
    if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 {
        return Err(bad());
    }
    Ok(bytes as u64)
}

/// The cgroup memory limit of this process, if one is set.
pub fn cgroup_limit() -> Option<u64> {
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let file = if id == "0" && controllers.is_empty() {
            format!("/sys/fs/cgroup{path}/memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes")
        } else {
            continue;
        };
        let text = std::fs::read_to_string(&file).ok()?;
        let limit: u64 = text.trim().parse().ok()?;
        // cgroup v1 reports "no limit" as a huge page-rounded number.
        return (limit < (1u64 << 60)).then_some(limit);
    }
    None
}

/// Physical RAM in bytes.
pub fn physical_ram() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(4 << 30, |kib| kib << 10)
}

/// The default budget (contract rule 3).
pub fn default_budget() -> u64 {
    cgroup_limit().unwrap_or_else(|| (physical_ram() as f64 * DEFAULT_RAM_FRACTION) as u64)
}

/// A shared byte budget. Cloning shares it.
#[derive(Debug, Clone)]
pub struct Budget {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    total: u64,
    used: AtomicU64,
}

/// Bytes held against a [`Budget`] until dropped.
#[derive(Debug)]
pub struct Reservation {
    budget: Budget,
    bytes: u64,
}

impl Budget {
    /// A budget of `total` bytes, with [`BASELINE_BYTES`] already taken.
    pub fn new(total: u64) -> Result<Budget, Error> {
        if total <= BASELINE_BYTES {
            return Err(Error::OverBudget {
                what: "the program itself".into(),
                needed: BASELINE_BYTES,
                available: total,
                budget: total,
            });
        }
        Ok(Budget { inner: Arc::new(Inner { total, used: AtomicU64::new(BASELINE_BYTES) }) })
    }

    /// A budget with no practical limit (tests, library users that manage memory themselves).
    pub fn unlimited() -> Budget {
        Budget { inner: Arc::new(Inner { total: u64::MAX / 2, used: AtomicU64::new(0) }) }
    }

    /// The whole budget in bytes.
    pub fn total(&self) -> u64 {
        self.inner.total
    }

    /// Bytes not reserved yet.
    pub fn available(&self) -> u64 {
        self.inner.total.saturating_sub(self.inner.used.load(Ordering::Relaxed))
    }

    /// Reserves `bytes` for `what`, or explains why not (contract rule 2).
    pub fn reserve(&self, what: &str, bytes: u64) -> Result<Reservation, Error> {
        // Relaxed: the counter orders nothing but itself; fetch_update makes the check and the
        // add one atomic step.
        let result = self.inner.used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
            used.checked_add(bytes).filter(|&u| u <= self.inner.total)
        });
        match result {
            Ok(_) => Ok(Reservation { budget: self.clone(), bytes }),
            Err(used) => Err(Error::OverBudget {
                what: what.to_string(),
                needed: bytes,
                available: self.inner.total.saturating_sub(used),
                budget: self.inner.total,
            }),
        }
    }
}

impl Reservation {
    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.inner.used.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_size_accepts_units_and_rejects_junk() {
        assert_eq!(parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("1.5k").unwrap(), 1536);
        assert_eq!(parse_size("64KiB").unwrap(), 64 << 10);
        for bad in ["", "G", "12Q", "-1", "0", "1e99T"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn reservation_over_budget_is_an_error_and_release_returns_bytes() {
        let budget = Budget::new(BASELINE_BYTES + 1000).unwrap();
        let a = budget.reserve("a", 600).unwrap();
        assert!(matches!(budget.reserve("b", 600), Err(Error::OverBudget { available: 400, .. })));
        drop(a);
        assert_eq!(budget.available(), 1000);
        budget.reserve("b", 600).unwrap();
    }
}
