//! Function addresses as `(module, offset)` pairs that mean the same function in every process
//! of a job started from one binary (ASLR puts each module at another base in each process).
//!
//! # Contract
//! 1. [`locate`] returns the index of the loaded module (in `dl_iterate_phdr` order) whose
//!    loaded segments hold `addr`, and `addr`'s offset from that module's base; `None` if no
//!    module holds it.
//! 2. [`resolve`] is its inverse in another process that loaded the same modules in the same
//!    order (one binary under `mpirun`); `None` if there is no such module or the offset lies
//!    outside its segments. Unlike LPF, which sends symbol names, `static` SPMD functions work.
//! 3. [`encode_spmd`]/[`decode_spmd`] and [`encode_funcs`]/[`decode_funcs`] apply rules 1 and 2
//!    to an SPMD function and to `lpf_args_t.f_symbols` (NULL entries stay NULL); decoding
//!    yields a function only where encoding found one in the same binary.

use sluice_lpf::consts::{LpfArgs, LpfFunc};
use sluice_lpf::engine::CSpmd;

use std::ffi::c_int;

/// What one `dl_iterate_phdr` walk looks for, and what it found.
struct Walk {
    /// Module index to find (`resolve`), or `usize::MAX` (`locate`).
    index: usize,
    /// Address to find (`locate`) or offset to check (`resolve`).
    addr: usize,
    /// Modules seen so far.
    seen: usize,
    /// `(index, base)` of the match.
    found: Option<(usize, usize)>,
}

/// True if `vaddr` (relative to the module's base) lies in a loaded segment of `info`.
///
/// # Safety
/// `info` is what `dl_iterate_phdr` passed to its callback.
unsafe fn holds(info: &libc::dl_phdr_info, vaddr: usize) -> bool {
    // SAFETY: `dlpi_phdr` points at `dlpi_phnum` program headers (dl_iterate_phdr's contract).
    let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
    phdrs.iter().any(|h| {
        h.p_type == libc::PT_LOAD
            && vaddr >= h.p_vaddr as usize
            && vaddr < (h.p_vaddr + h.p_memsz) as usize
    })
}

unsafe extern "C" fn visit(
    info: *mut libc::dl_phdr_info,
    _: usize,
    data: *mut libc::c_void,
) -> c_int {
    // SAFETY: `data` is the `Walk` that `walk` passed, alive and used only here meanwhile;
    // `info` is valid during the callback (dl_iterate_phdr's contract).
    let (walk, info) = unsafe { (&mut *data.cast::<Walk>(), &*info) };
    let base = info.dlpi_addr as usize;
    let index = walk.seen;
    walk.seen += 1;
    let hit = if walk.index == usize::MAX {
        // SAFETY: `info` comes from dl_iterate_phdr.
        walk.addr >= base && unsafe { holds(info, walk.addr - base) }
    } else {
        // SAFETY: `info` comes from dl_iterate_phdr.
        walk.index == index && unsafe { holds(info, walk.addr) }
    };
    if hit {
        walk.found = Some((index, base));
        return 1;
    }
    0
}

fn walk(index: usize, addr: usize) -> Option<(usize, usize)> {
    let mut w = Walk { index, addr, seen: 0, found: None };
    // SAFETY: `visit` matches dl_iterate_phdr's callback type and only touches `w` through
    // `data`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), std::ptr::from_mut(&mut w).cast()) };
    w.found
}

/// Rule 1.
pub(crate) fn locate(addr: usize) -> Option<(usize, usize)> {
    walk(usize::MAX, addr).map(|(index, base)| (index, addr - base))
}

/// Rule 2.
pub(crate) fn resolve(index: usize, offset: usize) -> Option<usize> {
    walk(index, offset).map(|(_, base)| base + offset)
}

/// Marks a NULL entry of `f_symbols`.
const NULL: u64 = u64::MAX;

/// Rule 3: `(module, offset)` of an SPMD function.
pub(crate) fn encode_spmd(spmd: CSpmd) -> Option<(u64, u64)> {
    locate(spmd as usize).map(|(m, o)| (m as u64, o as u64))
}

/// Rule 3: the SPMD function at `(module, offset)` of this process.
pub(crate) fn decode_spmd(module: u64, offset: u64) -> Option<CSpmd> {
    let addr = resolve(usize::try_from(module).ok()?, usize::try_from(offset).ok()?)?;
    // SAFETY: rank 0 encoded an SPMD function of the same binary (rule 2): the same module and
    // offset hold that function, with LPF's SPMD signature, in this process.
    Some(unsafe { std::mem::transmute::<usize, CSpmd>(addr) })
}

/// Rule 3: `args.f_symbols` as `(module, offset)` pairs; `None` if one is in no module.
pub(crate) fn encode_funcs(args: &LpfArgs) -> Option<Vec<u64>> {
    if args.f_symbols.is_null() || args.f_size == 0 {
        return Some(Vec::new());
    }
    // SAFETY: LPF's contract for lpf_exec: `f_symbols` points at `f_size` function pointers.
    let funcs = unsafe { std::slice::from_raw_parts(args.f_symbols, args.f_size) };
    let mut out = Vec::with_capacity(2 * funcs.len());
    for f in funcs {
        let (m, o) = match f {
            None => (NULL, 0),
            Some(f) => locate(*f as usize).map(|(m, o)| (m as u64, o as u64))?,
        };
        out.extend([m, o]);
    }
    Some(out)
}

/// Rule 3: the functions of [`encode_funcs`]'s pairs in this process; `None` if one is missing.
pub(crate) fn decode_funcs(pairs: &[u64]) -> Option<Vec<LpfFunc>> {
    pairs
        .chunks_exact(2)
        .map(|pair| {
            if pair[0] == NULL {
                return Some(None);
            }
            let addr = resolve(usize::try_from(pair[0]).ok()?, usize::try_from(pair[1]).ok()?)?;
            // SAFETY: rank 0 encoded a function of the same binary (rule 2); `lpf_func_t` is
            // an untyped function pointer that the SPMD function casts back, as in LPF.
            Some(Some(unsafe { std::mem::transmute::<usize, unsafe extern "C" fn()>(addr) }))
        })
        .collect()
}
