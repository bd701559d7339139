//! The process memory budget (`--memory`).
//!
//! # Contract
//! 1. A [`Budget`] is a byte count that caps the whole process: buffer pool, kernel state and a
//!    fixed allowance for the program itself ([`BASELINE_BYTES`]).
//! 2. Every large allocation is reserved first with [`Budget::reserve`]; a reservation over what
//!    is left is an [`Error::OverBudget`] before any work starts, never an OOM kill later.
//! 3. The default is the smallest memory limit of the process's cgroup and its ancestors when one
//!    is set (v2 `memory.max`, v1 `memory.limit_in_bytes`), else [`DEFAULT_RAM_FRACTION`] of
//!    physical RAM.
//! 4. A budget asked for that is more than physical RAM or the cgroup limit is refused
//!    ([`check_budget`]).
//! 5. Reservations count live bytes; the resident set also holds the allocator's free pages
//!    (holes left between live blocks of varying sizes, which it keeps for reuse). The pipeline
//!    calls [`Budget::hold_resident`] before every block: when the resident set comes within
//!    [`Budget::trim_margin`] of the total, the allocator's free pages go back to the kernel.
//!    Live bytes are within the reservations, so the resident set falls back to about what is
//!    reserved (pages of files the pipeline maps are not reserved themselves: the pool it
//!    reserves and leaves untouched for them stands in).
//!    Scale-22 weighted SSSP at `--memory 300M`: peak RSS 335-342 MiB without this (4 runs),
//!    294 MiB with it (2 runs), and 294 MiB with the reorder window reserved too (pipeline.rs
//!    rule 8), which at `--memory 250M` holds it to 248 MiB. Trimming costs page faults when
//!    the freed pages are used again: 6.0 against 4.5 s of system time there; none at 1 GiB.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::Error;

/// Bytes assumed for code, stacks, allocator slack and small state before anything is reserved.
/// Measured (issue 16 item 5): the peak RSS of `sluice` runs that reserve nothing large
/// (`graph info`, `bsp probe`, a refused `stats`) is 5.4-7.3 MiB; 16 MiB leaves twice that for
/// thread stacks and allocator slack (it was 48 MiB, a third of a 64 MiB budget).
pub const BASELINE_BYTES: u64 = 16 << 20;
/// The total of [`Budget::unlimited`].
const UNLIMITED: u64 = u64::MAX / 2;
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
    // `u64::MAX as f64` is 2^64, itself out of range.
    if !bytes.is_finite() || bytes < 1.0 || bytes >= u64::MAX as f64 {
        return Err(bad());
    }
    Ok(bytes as u64)
}

/// The smallest memory limit of this process's cgroup and its ancestors, if one is set
/// (contract rule 3).
pub fn cgroup_limit() -> Option<u64> {
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    cgroup_limit_in(&cgroup, Path::new("/sys/fs/cgroup"))
}

/// [`cgroup_limit`] for a `/proc/self/cgroup` text and a cgroup file system mounted at `root`:
/// walks from the process's cgroup up to the root, in the v2 hierarchy (`memory.max`) and the
/// v1 memory controller (`memory/…/memory.limit_in_bytes`), and takes the smallest limit. A
/// parent's limit caps its children although theirs reads "max" (issue 17, defect 12).
pub fn cgroup_limit_in(proc_cgroup: &str, root: &Path) -> Option<u64> {
    let mut smallest: Option<u64> = None;
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (base, file) = if id == "0" && controllers.is_empty() {
            (root.to_path_buf(), "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            (root.join("memory"), "memory.limit_in_bytes")
        } else {
            continue;
        };
        let mut dir = base.join(path.trim_start_matches('/'));
        loop {
            let limit = std::fs::read_to_string(dir.join(file))
                .ok()
                .and_then(|text| text.trim().parse::<u64>().ok())
                // cgroup v1 reports "no limit" as a huge page-rounded number; v2 as "max".
                .filter(|&l| l < (1u64 << 60));
            if let Some(l) = limit {
                smallest = Some(smallest.map_or(l, |s| s.min(l)));
            }
            if dir == base || !dir.pop() || !dir.starts_with(&base) {
                break;
            }
        }
    }
    smallest
}

/// Checks a budget the user asked for against the machine: more than its physical memory, or
/// than the cgroup limit (which would OOM-kill the process before the budget stops it), is an
/// [`Error::BudgetOverMachine`] with both numbers (issue 17, defect 14).
pub fn check_budget(requested: u64) -> Result<u64, Error> {
    check_budget_against(requested, physical_ram(), cgroup_limit())
}

fn check_budget_against(requested: u64, physical: u64, cgroup: Option<u64>) -> Result<u64, Error> {
    let (limit, what) = match cgroup {
        Some(c) if c < physical => (c, "this process's cgroup memory limit"),
        _ => (physical, "this machine's physical memory"),
    };
    if requested > limit {
        return Err(Error::BudgetOverMachine { requested, limit, what });
    }
    Ok(requested)
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
    /// The most `used` has been.
    peak: AtomicU64,
    /// Rule 5: the resident bytes right after the last trim (0: none since the resident set was
    /// last under the trim line), the trims made, and one trimmer at a time.
    trimmed_at: AtomicU64,
    trims: AtomicU64,
    trimming: AtomicBool,
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
        // Exactly the allowance is a budget with nothing left: refused by the first reservation,
        // whose error then names what that needs on top (a refusal here would report needing
        // no more than it was given).
        if total < BASELINE_BYTES {
            return Err(Error::OverBudget {
                what: "the program itself".into(),
                needed: BASELINE_BYTES,
                available: total,
                budget: total,
            });
        }
        Ok(Budget::with(total, BASELINE_BYTES))
    }

    /// A budget with no practical limit (tests, library users that manage memory themselves).
    pub fn unlimited() -> Budget {
        Budget::with(UNLIMITED, 0)
    }

    fn with(total: u64, used: u64) -> Budget {
        Budget {
            inner: Arc::new(Inner {
                total,
                used: AtomicU64::new(used),
                peak: AtomicU64::new(used),
                trimmed_at: AtomicU64::new(0),
                trims: AtomicU64::new(0),
                trimming: AtomicBool::new(false),
            }),
        }
    }

    /// The whole budget in bytes.
    pub fn total(&self) -> u64 {
        self.inner.total
    }

    /// Bytes not reserved yet.
    pub fn available(&self) -> u64 {
        self.inner.total.saturating_sub(self.inner.used.load(Ordering::Relaxed))
    }

    /// The most ever reserved at once, the program's allowance included: what to compare a
    /// peak RSS with.
    pub fn peak(&self) -> u64 {
        self.inner.peak.load(Ordering::Relaxed)
    }

    /// Reserves `bytes` for `what`, or explains why not (contract rule 2).
    pub fn reserve(&self, what: &str, bytes: u64) -> Result<Reservation, Error> {
        // Relaxed: the counter orders nothing but itself; fetch_update makes the check and the
        // add one atomic step.
        let result = self.inner.used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
            used.checked_add(bytes).filter(|&u| u <= self.inner.total)
        });
        match result {
            Ok(before) => {
                self.inner.peak.fetch_max(before + bytes, Ordering::Relaxed);
                Ok(Reservation { budget: self.clone(), bytes })
            }
            Err(used) => Err(Error::OverBudget {
                what: what.to_string(),
                needed: bytes,
                available: self.inner.total.saturating_sub(used),
                budget: self.inner.total,
            }),
        }
    }
}

impl Budget {
    /// How near the total the resident set may come before [`Budget::hold_resident`] trims: what
    /// the workers can allocate between two checks, with room to spare (a 32nd of the total,
    /// 8 to 64 MiB).
    pub fn trim_margin(&self) -> u64 {
        (self.inner.total / 32).clamp(8 << 20, 64 << 20)
    }

    /// Keeps the resident set within the budget (rule 5). One read of `/proc/self/statm` when
    /// the resident set is under the trim line; over it, one thread hands the allocator's free
    /// pages back, and no other trim follows until the resident set has grown by a quarter of
    /// the margin again (live bytes, or mapped file pages, over the line are not freed by
    /// trimming again) or comes within a quarter margin of the total.
    pub fn hold_resident(&self) {
        let inner = &*self.inner;
        if inner.total >= UNLIMITED {
            return;
        }
        let Some(resident) = crate::sys::resident_bytes() else { return };
        let last = inner.trimmed_at.load(Ordering::Relaxed);
        match trim_decision(resident, inner.total, self.trim_margin(), last) {
            Trim::Under => {
                if last != 0 {
                    inner.trimmed_at.store(0, Ordering::Relaxed);
                }
            }
            Trim::Wait => {}
            // Acquire/Release: the flag only keeps two threads from trimming at once.
            Trim::Now if !inner.trimming.swap(true, Ordering::Acquire) => {
                crate::sys::trim_malloc_arenas();
                inner.trims.fetch_add(1, Ordering::Relaxed);
                let after = crate::sys::resident_bytes().unwrap_or(resident).max(1);
                inner.trimmed_at.store(after, Ordering::Relaxed);
                inner.trimming.store(false, Ordering::Release);
            }
            Trim::Now => {}
        }
    }

    /// Trims [`Budget::hold_resident`] made so far.
    pub fn trims(&self) -> u64 {
        self.inner.trims.load(Ordering::Relaxed)
    }
}

/// What [`Budget::hold_resident`] does about a resident set.
#[derive(Debug, PartialEq, Eq)]
enum Trim {
    /// Under the trim line: nothing, and forget the last trim.
    Under,
    /// Over it, but no more than a quarter margin above what the last trim left (nothing new
    /// to free), and more than a quarter margin under the total.
    Wait,
    /// Over it: trim.
    Now,
}

/// Rule 5's decision for `resident` bytes against `total`, with the last trim having left
/// `last` bytes resident (0: none since the resident set was last under the line).
fn trim_decision(resident: u64, total: u64, margin: u64, last: u64) -> Trim {
    if resident.saturating_add(margin) <= total {
        Trim::Under
    } else if resident.saturating_add(margin / 4) > total {
        // Within a quarter margin of the total: every check trims.
        Trim::Now
    } else if last != 0 && resident < last.saturating_add(margin / 4) {
        Trim::Wait
    } else {
        Trim::Now
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
    fn trims_over_the_line_and_again_only_after_growth() {
        let (total, margin) = (300 << 20, 8 << 20);
        assert_eq!(trim_decision(200 << 20, total, margin, 0), Trim::Under);
        assert_eq!(trim_decision(total - margin, total, margin, 0), Trim::Under);
        assert_eq!(trim_decision(total - margin + 1, total, margin, 0), Trim::Now);
        // The last trim left 293 MiB: nothing new until 2 MiB (a quarter margin) more.
        let last = 293 << 20;
        assert_eq!(trim_decision(last, total, margin, last), Trim::Wait);
        assert_eq!(trim_decision(last + (2 << 20) - 1, total, margin, last), Trim::Wait);
        assert_eq!(trim_decision(last + (2 << 20), total, margin, last), Trim::Now);
        // Within a quarter margin of the total, every check trims.
        let last = 297 << 20;
        assert_eq!(trim_decision(last + 1, total, margin, last), Trim::Wait);
        assert_eq!(
            trim_decision(total - (2 << 20) + 1, total, margin, total - (2 << 20)),
            Trim::Now
        );
        // Over the total itself: still trims, never saturates into "under".
        assert_eq!(trim_decision(u64::MAX, total, margin, 0), Trim::Now);
        // The margin: a 32nd of the total, 8 to 64 MiB.
        assert_eq!(Budget::new(100 << 20).unwrap().trim_margin(), 8 << 20);
        assert_eq!(Budget::new(1 << 30).unwrap().trim_margin(), 32 << 20);
        assert_eq!(Budget::new(16 << 30).unwrap().trim_margin(), 64 << 20);
    }

    #[test]
    fn resident_bytes_agree_with_the_kernels_status_file() {
        // Two readings of the same counter (statm's pages, status's VmRSS in KiB), back to back:
        // equal but for what other test threads did between them, so the closest of a few.
        let vm_rss = || {
            let status = std::fs::read_to_string("/proc/self/status").unwrap();
            let kib = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).expect("VmRSS");
            kib.trim().trim_end_matches("kB").trim().parse::<u64>().unwrap() << 10
        };
        let closest = (0..8)
            .map(|_| crate::sys::resident_bytes().expect("/proc/self/statm").abs_diff(vm_rss()))
            .min()
            .unwrap();
        assert!(closest < 1 << 20, "statm and VmRSS {closest} bytes apart at best");
        // An unlimited budget never trims.
        let free = Budget::unlimited();
        free.hold_resident();
        assert_eq!(free.trims(), 0);
    }

    #[test]
    fn parse_size_accepts_units_and_rejects_junk() {
        assert_eq!(parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("1.5k").unwrap(), 1536);
        assert_eq!(parse_size("64KiB").unwrap(), 64 << 10);
        for bad in ["", "G", "12Q", "-1", "0", "1e99T", "16777216T"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cgroup_limit_is_the_smallest_on_the_way_to_the_root() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        // v2: the process's own cgroup says "max", its parent 512 MiB, the grandparent 1 GiB.
        let own = r.join("a/b/c");
        std::fs::create_dir_all(&own).unwrap();
        std::fs::write(own.join("memory.max"), "max\n").unwrap();
        std::fs::write(r.join("a/b/memory.max"), "536870912\n").unwrap();
        std::fs::write(r.join("a/memory.max"), "1073741824\n").unwrap();
        assert_eq!(cgroup_limit_in("0::/a/b/c\n", r), Some(512 << 20));
        assert_eq!(cgroup_limit_in("0::/a\n", r), Some(1 << 30));
        // v1: the memory controller's hierarchy, "unlimited" as a huge number.
        let v1 = r.join("memory/x/y");
        std::fs::create_dir_all(&v1).unwrap();
        std::fs::write(v1.join("memory.limit_in_bytes"), "9223372036854771712\n").unwrap();
        std::fs::write(r.join("memory/x/memory.limit_in_bytes"), "268435456\n").unwrap();
        assert_eq!(cgroup_limit_in("5:cpu,memory:/x/y\n", r), Some(256 << 20));
        assert_eq!(cgroup_limit_in("5:cpu:/x/y\n", r), None);
        // Both: the smaller wins. No limit anywhere: none.
        assert_eq!(cgroup_limit_in("5:memory:/x/y\n0::/a/b/c\n", r), Some(256 << 20));
        std::fs::create_dir_all(r.join("free")).unwrap();
        assert_eq!(cgroup_limit_in("0::/free\n", r), None);
    }

    #[test]
    fn budget_over_the_machine_is_refused_with_the_numbers() {
        let ram = physical_ram();
        assert!(check_budget(ram / 64).is_ok() || cgroup_limit().is_some_and(|c| c < ram / 64));
        let huge = 1u64 << 60;
        let err = check_budget(huge).unwrap_err().to_string();
        assert!(err.contains(&huge.to_string()), "{err}");
        let err = check_budget_against(3000, 2000, None).unwrap_err().to_string();
        assert!(err.contains("3000") && err.contains("2000") && err.contains("physical"), "{err}");
        let err = check_budget_against(3000, 8000, Some(1000)).unwrap_err().to_string();
        assert!(err.contains("1000") && err.contains("cgroup"), "{err}");
        assert_eq!(check_budget_against(900, 8000, Some(1000)).unwrap(), 900);
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

    // The CLI's hint ("needs --memory N at least") is what was in use plus what was asked for;
    // it must name more than the budget that refused, at every size around the allowance (a
    // 16M budget once printed "needs 16M at least").
    #[test]
    fn every_refusal_asks_for_more_than_the_budget_had() {
        for total in [BASELINE_BYTES - 1, BASELINE_BYTES, BASELINE_BYTES + 1, BASELINE_BYTES + 4096]
        {
            let refusal = match Budget::new(total) {
                Err(e) => e,
                Ok(budget) => budget.reserve("a block", 8192).unwrap_err(),
            };
            let Error::OverBudget { needed, available, budget, .. } = refusal else {
                panic!("{total}: {refusal}")
            };
            assert_eq!(budget, total);
            assert!(budget - available + needed > total, "{total}: the hint would not exceed it");
        }
    }

    // The peak is the most held at once (what a peak RSS is compared with), not a running sum:
    // it counts the allowance, keeps the high-water mark after releases, and ignores refusals.
    #[test]
    fn peak_is_the_most_held_at_once() {
        let budget = Budget::new(BASELINE_BYTES + 1000).unwrap();
        assert_eq!(budget.peak(), BASELINE_BYTES);
        let a = budget.reserve("a", 300).unwrap();
        let b = budget.reserve("b", 500).unwrap();
        drop(a);
        let c = budget.reserve("c", 200).unwrap();
        assert_eq!(budget.peak(), BASELINE_BYTES + 800);
        budget.reserve("too much", 400).unwrap_err();
        assert_eq!(budget.peak(), BASELINE_BYTES + 800);
        drop((b, c));
        let _d = budget.reserve("d", 1000).unwrap();
        assert_eq!(budget.peak(), BASELINE_BYTES + 1000);
    }
}
