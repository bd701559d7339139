//! Raw system calls the pipeline needs beyond `std`: page-cache residency (`cachestat`, falling
//! back to `mmap` + `mincore`) and opening a file with `O_DIRECT`.
//!
//! # Contract
//! 1. [`cached_bytes`] returns how many bytes of `[offset, offset + len)` of a file are in the
//!    page cache, from `cachestat(2)` (Linux ≥ 6.5) where the kernel has it, else from
//!    `mincore(2)` over a temporary read-only mapping; `None` if neither works.
//! 2. [`open_direct`] opens read-only with `O_DIRECT`; the error is the kernel's (`EINVAL` where
//!    the file system refuses direct I/O, e.g. tmpfs).
//! 3. A [`Mapping`] is a read-only shared mapping of a whole file, unmapped on drop. Its bytes
//!    are the page cache's: no copy. A file truncated while it is mapped makes a read of a page
//!    past the new end raise `SIGBUS`: the range is registered with `sigbus.rs`, whose handler
//!    turns those pages into zeros and records the offset ([`Mapping::fault`]), which the
//!    reader checks after every mapped read and reports as an error (issue 17, defect 9);
//!    the pipeline maps only files it reads mostly from the page cache, and
//!    `SLUICE_NO_MMAP=1` turns mapping off. [`Mapping::release`] drops the pages of finished
//!    granules (resident.rs) from the resident set, so a mapped scan's RSS stays within
//!    2 × workers × 8 MiB.
//! 4. [`drop_from_page_cache`] writes a file's dirty pages back and asks the kernel to drop its
//!    pages (`posix_fadvise(POSIX_FADV_DONTNEED)`), so that the next read comes from the device;
//!    pages that a process maps, and every page of tmpfs, stay.
//! 5. [`one_malloc_arena`] makes glibc's malloc keep one arena for every thread
//!    (`mallopt(M_ARENA_MAX, 1)`), so memory a pass frees is reused by the next whichever
//!    thread allocates it: with an arena per thread, blocks copied on the workers, gathered on
//!    rayon threads and freed on appliers left each arena with free holes the others could not
//!    use (weighted `sssp`, scale 22, `--memory 760M`: peak RSS 1111 MiB with per-thread arenas,
//!    553 MiB with one; reservations never exceeded the budget). Call it first in `main`.
//! 6. [`stdout_closed_at_start`] says whether descriptor 1 was closed when the process was
//!    started, from a check that runs before Rust's runtime reopens a closed descriptor 1 on
//!    `/dev/null` (an `.init_array` entry, run by the C library before `main`). Asking after
//!    the fact cannot tell that reopened descriptor from a `/dev/null` the parent opened
//!    read-write on purpose (Python's `subprocess.DEVNULL`), which must run.
//! 7. [`resident_bytes`] is the process's resident set as `ps` and GNU time count it (anonymous
//!    and file-backed pages): what `--memory` caps (memory.rs rule 5).
//! 8. [`prefetch`] asks the CPU to start loading the cache line of a value (`prefetcht0`) and
//!    returns at once: for loops whose loads are random (a lookup table the size of the L3
//!    cache), so that the misses of the next values overlap the work on this one. A hint: it
//!    never faults and changes no value; a no-op off x86-64.
//! 9. [`start_writeback`] asks the kernel to start writing a file range's dirty pages to the
//!    device (`sync_file_range(SYNC_FILE_RANGE_WRITE)`) and returns without waiting for them:
//!    a writer that calls it as it goes leaves its final `fsync` only the tail to wait for.
//!    Best effort: an error (a file system without it) is ignored; `fsync` still makes the
//!    file durable.
//! 10. A [`HugeSlice`] is a zeroed table on a mapping of its own, 2 MiB-aligned and advised
//!     `MADV_HUGEPAGE` before its first touch, so a table of a few MiB looked up at random takes
//!     a few TLB entries instead of one per 4 KiB (the import's id lookup); where THP is off it
//!     is 4 KiB pages, as a `Vec`. It holds only [`Zeroed`] types, for which zeros are a value.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// `cachestat(2)` number; the same on every architecture (added in Linux 6.5, commit cf264e1329fb).
const SYS_CACHESTAT: libc::c_long = 451;

/// `struct cachestat_range` of `include/uapi/linux/mman.h`.
#[repr(C)]
struct CachestatRange {
    off: u64,
    len: u64,
}

/// `struct cachestat` of `include/uapi/linux/mman.h`.
#[repr(C)]
#[derive(Default)]
struct Cachestat {
    nr_cache: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

/// How residency was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probe {
    Cachestat,
    Mincore,
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 { size as u64 } else { 4096 }
}

/// Bytes of `[offset, offset + len)` in the page cache, and how that was found (rule 1).
pub(crate) fn cached_bytes(file: &File, offset: u64, len: u64) -> Option<(u64, Probe)> {
    if len == 0 {
        return Some((0, Probe::Cachestat));
    }
    if std::env::var_os("SLUICE_NO_CACHESTAT").is_none()
        && let Some(bytes) = cachestat(file, offset, len)
    {
        return Some((bytes, Probe::Cachestat));
    }
    mincore(file, offset, len).map(|bytes| (bytes, Probe::Mincore))
}

fn cachestat(file: &File, offset: u64, len: u64) -> Option<u64> {
    let range = CachestatRange { off: offset, len };
    let mut stat = Cachestat::default();
    // SAFETY: `range` and `stat` are live, properly laid-out `repr(C)` values for the duration
    // of the call; the kernel reads the first and writes the second; flags must be 0.
    let rc = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            file.as_raw_fd(),
            &range as *const CachestatRange,
            &mut stat as *mut Cachestat,
            0 as libc::c_uint,
        )
    };
    let _ = (stat.nr_dirty, stat.nr_writeback, stat.nr_evicted, stat.nr_recently_evicted);
    (rc == 0).then(|| (stat.nr_cache * page_size()).min(len))
}

fn mincore(file: &File, offset: u64, len: u64) -> Option<u64> {
    let page = page_size();
    let start = offset / page * page;
    let map_len = usize::try_from(offset + len - start).ok()?;
    let pages = map_len.div_ceil(page as usize);
    // SAFETY: a fresh read-only shared mapping of a file we hold open; the kernel picks the
    // address. Nothing reads through it: mincore only inspects residency.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            map_len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            start as libc::off_t,
        )
    };
    if addr == libc::MAP_FAILED {
        return None;
    }
    let mut vec = vec![0u8; pages];
    // SAFETY: `addr` is the page-aligned start of a `map_len`-byte mapping we own, and `vec`
    // has one byte per page of it, as mincore(2) requires.
    let rc = unsafe { libc::mincore(addr, map_len, vec.as_mut_ptr()) };
    // SAFETY: unmapping exactly the mapping made above; nothing refers into it.
    unsafe { libc::munmap(addr, map_len) };
    (rc == 0).then(|| (vec.iter().filter(|&&v| v & 1 != 0).count() as u64 * page).min(len))
}

/// A read-only shared mapping of a whole file (rule 3).
#[derive(Debug)]
pub(crate) struct Mapping {
    addr: *mut u8,
    len: usize,
    /// The range registered for SIGBUS recovery (`sigbus.rs`); `None` only when `len == 0`.
    guard: Option<crate::sigbus::Guard>,
}

// SAFETY: the mapping is read-only and owned by this value; sharing `&[u8]` views of it across
// threads is like sharing a `&[u8]` of a `Box<[u8]>` nobody writes through.
unsafe impl Send for Mapping {}
// SAFETY: as for `Send`: no method writes through the mapping.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps the first `len` bytes of `file` (its length when the plan was checked). `len == 0`
    /// maps nothing.
    pub(crate) fn new(file: &File, len: u64) -> std::io::Result<Mapping> {
        let len = usize::try_from(len).map_err(std::io::Error::other)?;
        if len == 0 {
            return Ok(Mapping { addr: std::ptr::null_mut(), len: 0, guard: None });
        }
        // SAFETY: a fresh read-only shared mapping of an open file; the kernel picks the address.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let Some(guard) = crate::sigbus::register(addr as usize, len) else {
            // SAFETY: unmapping exactly the mapping made above; nothing refers into it.
            unsafe { libc::munmap(addr, len) };
            return Err(std::io::Error::other("no SIGBUS recovery slot left"));
        };
        Ok(Mapping { addr: addr.cast(), len, guard: Some(guard) })
    }

    /// The lowest offset a read of the mapping faulted at because the file had shrunk (its
    /// pages from there on now read as zeros: `sigbus.rs`, rule 2), if one did.
    pub(crate) fn fault(&self) -> Option<u64> {
        self.guard.as_ref().and_then(|g| g.fault())
    }

    /// Bytes mapped.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The mapped bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `addr` is the start of a live `len`-byte readable mapping owned by `self`
        // (unmapped only in `Drop`). Nothing in this process writes the file while it is
        // mapped; a page past the end of a file truncated meanwhile reads as zeros after the
        // SIGBUS handler replaced it (rule 3), and the reader checks `fault` before using them.
        unsafe { std::slice::from_raw_parts(self.addr, self.len) }
    }
}

impl Mapping {
    /// Fills this process's page-table entries for `[offset, offset + len)` in one call
    /// (`MADV_POPULATE_READ`, Linux ≥ 5.14), so a kernel scanning a mapped block does not take
    /// one page fault per 4 KiB page (256 per MiB): the pages are in the page cache already, only
    /// the mappings are missing after [`Mapping::release`] dropped them. On an older kernel the
    /// call fails with EINVAL and the pages fault in one by one as before.
    pub(crate) fn populate(&self, offset: usize, len: usize) {
        /// `MADV_POPULATE_READ` from linux/mman.h (the libc crate may not name it).
        const MADV_POPULATE_READ: libc::c_int = 22;
        let page = page_size() as usize;
        let start = offset / page * page;
        let end = (offset + len).min(self.len);
        if self.len == 0 || end <= start {
            return;
        }
        // SAFETY: `[start, end)` lies inside the mapping owned by `self` (start is page-aligned,
        // end is clipped to its length). MADV_POPULATE_READ only faults in readable pages of a
        // read-only shared file mapping; it changes no byte and no mapping's protection.
        unsafe { libc::madvise(self.addr.add(start).cast(), end - start, MADV_POPULATE_READ) };
    }

    /// Drops this process's page-table entries for the pages covering `[offset, offset + len)`,
    /// so they stop counting in its resident set (the budget caps the whole process, RSS
    /// included). The page cache keeps the pages; touching them again faults them back in with
    /// the same bytes (`madvise(2)`, `MADV_DONTNEED` on a shared file mapping).
    pub(crate) fn release(&self, offset: usize, len: usize) {
        let page = page_size() as usize;
        let start = offset / page * page;
        let end = (offset + len).min(self.len);
        if self.len == 0 || end <= start {
            return;
        }
        // SAFETY: `[start, end)` lies inside the mapping owned by `self` (start is page-aligned,
        // end is clipped to its length). MADV_DONTNEED on a read-only shared file mapping changes
        // no byte anyone can read: a later access faults the same page-cache page back in, so
        // `&[u8]` views held by other threads stay valid and unchanged.
        unsafe { libc::madvise(self.addr.add(start).cast(), end - start, libc::MADV_DONTNEED) };
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // Unregister before unmapping (`sigbus.rs`, rule 4).
        drop(self.guard.take());
        if self.len > 0 {
            // SAFETY: unmapping exactly the mapping made in `new`; `&self` borrows of its bytes
            // have ended, since `drop` has `&mut self`.
            unsafe { libc::munmap(self.addr.cast(), self.len) };
        }
    }
}

/// Alignment of an [`AnonRegion`]: one x86-64 / arm64 huge page.
const HUGE_PAGE: usize = 2 << 20;

/// Zeroed anonymous memory, [`HUGE_PAGE`]-aligned and advised `MADV_HUGEPAGE` (rule 4), so
/// buffers for O_DIRECT reads are backed by 2 MiB pages where the kernel has them: one
/// physically contiguous segment per 2 MiB instead of 512 scattered 4 KiB pages. This machine's
/// virtio disk takes at most 254 segments per request, so a 1 MiB read into 4 KiB pages (256
/// segments) is split in two, a 4 MiB read in five.
#[derive(Debug)]
pub(crate) struct AnonRegion {
    /// Start of the whole mapping (what `munmap` takes).
    map: *mut u8,
    map_len: usize,
    /// The aligned start handed out.
    base: *mut u8,
}

// SAFETY: plain owned memory, like a `Box<[u8]>`; who may touch which bytes is the owner's
// business (the buffer pool's contract).
unsafe impl Send for AnonRegion {}
// SAFETY: as for `Send`: `&AnonRegion` only exposes the base pointer.
unsafe impl Sync for AnonRegion {}

impl AnonRegion {
    /// At least `len` zeroed bytes (`len > 0`).
    pub(crate) fn new(len: usize) -> std::io::Result<AnonRegion> {
        let map_len = len
            .checked_add(HUGE_PAGE)
            .ok_or_else(|| std::io::Error::other("buffer pool size overflows"))?;
        // SAFETY: a fresh private anonymous mapping; the kernel picks the address and fills it
        // with zeros on first touch.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let map = map.cast::<u8>();
        let base = map.wrapping_add(map.align_offset(HUGE_PAGE));
        // SAFETY: `[base, base + len)` lies inside the mapping just made (`align_offset` is
        // below HUGE_PAGE, and the mapping has HUGE_PAGE spare bytes). MADV_HUGEPAGE changes no
        // byte; where THP is off it fails harmlessly and 4 KiB pages are used. Miri has no
        // `madvise`: a hint only, left out there (scripts/soundness runs the pool's tests).
        #[cfg(not(miri))]
        unsafe {
            libc::madvise(base.cast(), len, libc::MADV_HUGEPAGE)
        };
        Ok(AnonRegion { map, map_len, base })
    }

    /// The aligned start: `len` zeroed bytes, valid until drop.
    pub(crate) fn base(&self) -> *mut u8 {
        self.base
    }
}

impl Drop for AnonRegion {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `new`; the owner guarantees nobody uses
        // its bytes any more (the pool is dropped only after every buffer came back).
        unsafe { libc::munmap(self.map.cast(), self.map_len) };
    }
}

/// Values whose all-zero bytes are a valid value: what a [`HugeSlice`] may hold (sealed).
pub trait Zeroed: Copy + sealed::Sealed {}

mod sealed {
    /// Only this module's impls may make a type [`super::Zeroed`].
    pub trait Sealed {}
}

macro_rules! zeroed {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Zeroed for $t {}
        impl<const N: usize> sealed::Sealed for [$t; N] {}
        impl<const N: usize> Zeroed for [$t; N] {}
    )*};
}
zeroed!(u8, u16, u32, u64);

/// Rule 10: `len` zeroed values on memory of their own, 2 MiB-aligned and advised
/// `MADV_HUGEPAGE` before any byte is touched, for tables looked up at random.
pub struct HugeSlice<T: Zeroed> {
    /// None for an empty slice (a mapping cannot be empty).
    region: Option<AnonRegion>,
    len: usize,
    _values: std::marker::PhantomData<T>,
}

impl<T: Zeroed> HugeSlice<T> {
    /// `len` zeroed values; the mapping's error where it fails.
    pub fn zeroed(len: usize) -> std::io::Result<HugeSlice<T>> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| std::io::Error::other("table size overflows"))?;
        let region = if bytes == 0 { None } else { Some(AnonRegion::new(bytes)?) };
        Ok(HugeSlice { region, len, _values: std::marker::PhantomData })
    }
}

impl<T: Zeroed> std::ops::Deref for HugeSlice<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &self.region {
            // SAFETY: the region holds `len * size_of::<T>()` zeroed bytes, aligned to 2 MiB
            // (so to `T`), and all-zero bytes are a valid `T` (`Zeroed`); it lives as long as
            // `self`, and `&self` excludes a `&mut` borrow of it.
            Some(r) => unsafe { std::slice::from_raw_parts(r.base().cast::<T>(), self.len) },
            None => &[],
        }
    }
}

impl<T: Zeroed> std::ops::DerefMut for HugeSlice<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match &self.region {
            // SAFETY: as in `deref`; `&mut self` makes this the only borrow of the bytes.
            Some(r) => unsafe { std::slice::from_raw_parts_mut(r.base().cast::<T>(), self.len) },
            None => &mut [],
        }
    }
}

impl<T: Zeroed> std::fmt::Debug for HugeSlice<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HugeSlice {{ len: {} }}", self.len)
    }
}

/// Rule 8: starts loading the cache line that holds `value`.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` is a hint that reads nothing architecturally and cannot fault; the
    // pointer comes from a reference, so it is valid anyway. SSE is part of x86-64's baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (value as *const T).cast::<i8>(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// Rule 9: starts writing back the dirty pages of `len` bytes of `file` from `offset`.
pub fn start_writeback(file: &File, offset: u64, len: u64) {
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else { return };
    // SAFETY: `sync_file_range` reads no memory of ours; the descriptor is open for the
    // borrow of `file`, and any error is only returned.
    let _ = unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE)
    };
}

/// Opens `path` read-only with `O_DIRECT` (rule 2).
pub(crate) fn open_direct(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(path)
}

/// One malloc arena for the whole process (contract rule 5); a no-op where the C library is
/// not glibc. Returns true if and only if the setting took.
pub fn one_malloc_arena() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallopt` only sets a tunable of the allocator; M_ARENA_MAX with a positive
        // value is valid at any time (mallopt(3)); arenas made before it stay in use.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}

/// Hands the free memory of malloc's arenas back to the kernel (`malloc_trim(0)`: the free
/// pages inside the heap too, not only its top), so that holes a pass's frees leave in the one
/// arena do not stay resident into the next pass (contract rule 5); a no-op where the C library
/// is not glibc. Costs a walk of the arena's free lists, and the pages it frees fault back in
/// when reused: call it between passes, or when the resident set nears the budget
/// ([`crate::Budget::hold_resident`]), not per block.
pub fn trim_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases memory the allocator holds free (malloc_trim(3));
    // it is thread-safe (it takes each arena's lock) and valid at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// This process's resident set in bytes (anonymous and file pages, what `ps` calls RSS), from
/// `/proc/self/statm` read at offset 0 of a descriptor opened once (about a microsecond);
/// `None` where that file cannot be read (contract rule 7).
pub(crate) fn resident_bytes() -> Option<u64> {
    use std::os::unix::fs::FileExt;
    static STATM: std::sync::OnceLock<Option<File>> = std::sync::OnceLock::new();
    let file = STATM.get_or_init(|| File::open("/proc/self/statm").ok()).as_ref()?;
    let mut text = [0u8; 128];
    let len = file.read_at(&mut text, 0).ok()?;
    // "size resident shared text lib data dt", in pages.
    let pages = std::str::from_utf8(&text[..len]).ok()?.split_whitespace().nth(1)?;
    Some(pages.parse::<u64>().ok()? * page_size())
}

/// Set before `main` if descriptor 1 was closed (contract rule 6).
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

extern "C" fn note_closed_stdout() {
    // SAFETY: F_GETFD reads a descriptor's flags and fails with EBADF on a closed one; it
    // touches no memory of ours, for any descriptor number.
    if unsafe { libc::fcntl(1, libc::F_GETFD) } == -1 {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
}

// SAFETY: the C library calls every `.init_array` entry once, before `main` and any thread,
// as a function taking no arguments; `note_closed_stdout` is one and needs nothing initialised
// but the C library. Hand-written rather than the `ctor` crate: six lines against a proc-macro
// dependency in every build.
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static NOTE_CLOSED_STDOUT: extern "C" fn() = note_closed_stdout;

/// Whether descriptor 1 was closed when the process started (contract rule 6).
pub(crate) fn stdout_closed_at_start() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Drops `file`'s pages from the page cache after writing them back (contract rule 4).
pub fn drop_from_page_cache(file: &File) -> std::io::Result<()> {
    file.sync_data()?;
    // SAFETY: posix_fadvise reads only its integer arguments; the descriptor stays open for the
    // call (borrowed from `file`), and advice changes no memory of this process.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    match rc {
        0 => Ok(()),
        errno => Err(std::io::Error::from_raw_os_error(errno)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Rule 10: zeroed, as long as asked, 2 MiB-aligned, writable, and empty where asked for
    /// nothing; an impossible size is an error, not an abort.
    #[test]
    fn huge_slices_are_zeroed_aligned_and_writable() {
        for len in [0usize, 1, 4095, (3 << 20) / 16 + 5] {
            let mut t = HugeSlice::<[u64; 2]>::zeroed(len).unwrap();
            assert_eq!(t.len(), len);
            assert!(t.iter().all(|w| *w == [0, 0]), "{len}");
            if len > 0 {
                assert_eq!(t.as_ptr() as usize % HUGE_PAGE, 0, "{len}");
            }
            for (i, w) in t.iter_mut().enumerate() {
                *w = [i as u64, !(i as u64)];
            }
            assert!(t.iter().enumerate().all(|(i, w)| *w == [i as u64, !(i as u64)]), "{len}");
        }
        assert!(HugeSlice::<u64>::zeroed(usize::MAX / 4).is_err());
    }

    #[test]
    fn cached_bytes_sees_a_freshly_written_file() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&vec![7u8; 64 << 10]).unwrap();
        file.flush().unwrap();
        let f = File::open(file.path()).unwrap();
        match cached_bytes(&f, 0, 64 << 10) {
            Some((bytes, probe)) => {
                // A file just written sits in the page cache (dirty or clean), whole.
                assert_eq!(bytes, 64 << 10, "{probe:?}");
            }
            None => println!("skipping: neither cachestat nor mincore works here"),
        }
        let via_mincore = mincore(&f, 4096, 8192);
        assert_eq!(via_mincore, Some(8192), "mincore agrees on a sub-range");
    }
}
