//! Sluice's FFT and FFTW builds called in turn in one process, for `bench/kernels/fft
//! --interleaved`: each round runs a block of calls of every contestant, back to back, so that
//! the host's slow and fast phases (seconds long on this project's 2-core virtual machines,
//! `bench/kernels/README.md`) fall on all of them alike, and each round's ratio compares calls
//! made within milliseconds of each other.
//!
//! ```text
//! fft_interleaved INPUT.npy --peer NAME=LIB [--peer NAME=LIB ...] [--threads T] [--procs P]
//!                 [--rounds R] [--block B] [--flags measure|patient|estimate] [--wisdom-dir D]
//! ```
//!
//! - `INPUT.npy`: 1-D complex128, n a power of two.
//! - Sluice: `Fft::process(&input, &mut output)` on buffers from `fft::buffer`, as `sluice
//!   fft` runs it; p as `sluice fft` chooses it (`--procs` fixes it).
//! - Each peer: an FFTW library opened at run time (`LIB`: its threads or OpenMP library, whose
//!   dependencies hold the rest of FFTW; with `LD_LIBRARY_PATH` where they are not on the
//!   loader's path), `fftw_plan_with_nthreads(T)`, `fftw_plan_dft_1d` out of place, forward,
//!   with the planner flag (wisdom kept in `D/interleaved-NAME-T.wisdom`), on `fftw_malloc`'s
//!   buffers, as FFTW's own documentation sets it up.
//! - Before timing, every peer's output is checked against sluice's (relative L2 < 1e-10).
//! - Then one untimed block each, and R rounds; a round runs B calls of each contestant, in an
//!   order rotated each round, and keeps the median of each block. Prints one JSON object.

#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use sluice_kernels::fft::{self, Complex64, Direction, Fft};

/// FFTW's planner flags and sign (`fftw3.h`).
const FFTW_FORWARD: c_int = -1;
const FFTW_MEASURE: c_uint = 0;
const FFTW_PATIENT: c_uint = 1 << 5;
const FFTW_ESTIMATE: c_uint = 1 << 6;

type Plan = *mut c_void;

/// The FFTW functions the harness calls, from one library handle.
struct Fftw {
    version: String,
    plan_with_nthreads: unsafe extern "C" fn(c_int),
    import_wisdom: unsafe extern "C" fn(*const c_char) -> c_int,
    export_wisdom: unsafe extern "C" fn(*const c_char) -> c_int,
    malloc: unsafe extern "C" fn(usize) -> *mut c_void,
    free: unsafe extern "C" fn(*mut c_void),
    plan_dft_1d: unsafe extern "C" fn(c_int, *mut Complex64, *mut Complex64, c_int, c_uint) -> Plan,
    execute: unsafe extern "C" fn(Plan),
    destroy_plan: unsafe extern "C" fn(Plan),
}

impl Fftw {
    /// Opens `lib` (its own copy of FFTW's symbols: `RTLD_LOCAL`) and initialises its threads.
    fn open(lib: &str) -> Result<Fftw, String> {
        let path = CString::new(lib).map_err(|e| format!("{lib}: {e}"))?;
        // SAFETY: `path` is a NUL-terminated string; dlopen runs the library's initialisers,
        // which for FFTW set up nothing but its own state.
        let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            // SAFETY: dlerror returns NULL or a NUL-terminated message owned by libc.
            let why = unsafe { libc::dlerror() };
            let why = if why.is_null() {
                "unknown error".into()
            } else {
                // SAFETY: non-null, NUL-terminated (above); copied before any other dl call.
                unsafe { CStr::from_ptr(why) }.to_string_lossy().into_owned()
            };
            return Err(format!("cannot open {lib}: {why}"));
        }
        let sym = |name: &str| -> Result<*mut c_void, String> {
            let c = CString::new(name).map_err(|e| e.to_string())?;
            // SAFETY: `handle` is a live handle from dlopen; `c` is NUL-terminated.
            let p = unsafe { libc::dlsym(handle, c.as_ptr()) };
            if p.is_null() { Err(format!("{lib}: no symbol {name}")) } else { Ok(p) }
        };
        // SAFETY: the symbol is FFTW's `int fftw_init_threads(void)` (fftw3.h).
        let init_threads =
            unsafe { func::<unsafe extern "C" fn() -> c_int>(sym("fftw_init_threads")?) };
        let version = sym("fftw_version")?;
        // SAFETY: each symbol is FFTW's function of that name, whose C signature in fftw3.h is
        // the function pointer type it becomes; `fftw_version` is its NUL-terminated string.
        let fftw = unsafe {
            Fftw {
                version: CStr::from_ptr(version.cast::<c_char>()).to_string_lossy().into_owned(),
                plan_with_nthreads: func(sym("fftw_plan_with_nthreads")?),
                import_wisdom: func(sym("fftw_import_wisdom_from_filename")?),
                export_wisdom: func(sym("fftw_export_wisdom_to_filename")?),
                malloc: func(sym("fftw_malloc")?),
                free: func(sym("fftw_free")?),
                plan_dft_1d: func(sym("fftw_plan_dft_1d")?),
                execute: func(sym("fftw_execute")?),
                destroy_plan: func(sym("fftw_destroy_plan")?),
            }
        };
        // SAFETY: FFTW's documented first call before any threaded planning.
        if unsafe { init_threads() } == 0 {
            return Err(format!("{lib}: fftw_init_threads failed"));
        }
        Ok(fftw)
    }
}

/// The function at `p`, a symbol's address from `dlsym`, as the pointer type `F`.
///
/// # Safety
/// `F` must be an `extern "C"` function pointer type matching the symbol's C signature.
unsafe fn func<F: Copy>(p: *mut c_void) -> F {
    assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>(), "a function pointer");
    // SAFETY: `F` is a function pointer of the same size (asserted) for the symbol at `p` (the
    // caller's promise); a non-null code address is a valid value of it.
    unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) }
}

/// One FFTW plan over its own `fftw_malloc` buffers of n values.
struct Peer {
    name: String,
    lib: String,
    fftw: Fftw,
    plan: Plan,
    input: *mut Complex64,
    output: *mut Complex64,
    n: usize,
    plan_seconds: f64,
}

impl Peer {
    fn new(name: &str, lib: &str, n: usize, args: &Args, x: &[Complex64]) -> Result<Peer, String> {
        let fftw = Fftw::open(lib)?;
        let bytes = n * std::mem::size_of::<Complex64>();
        // SAFETY: fftw_malloc returns NULL or a block of `bytes` bytes aligned for FFTW's SIMD,
        // freed in `drop` with fftw_free.
        let (input, output): (*mut Complex64, *mut Complex64) =
            unsafe { ((fftw.malloc)(bytes).cast(), (fftw.malloc)(bytes).cast()) };
        if input.is_null() || output.is_null() {
            return Err(format!("{name}: fftw_malloc of {bytes} bytes failed"));
        }
        let wisdom = args.wisdom_dir.as_ref().map(|d| {
            let file = d.join(format!("interleaved-{name}-{}.wisdom", args.threads));
            CString::new(file.to_string_lossy().into_owned()).expect("no NUL in a path")
        });
        let n_c = c_int::try_from(n).map_err(|_| format!("n = {n} does not fit FFTW's int"))?;
        let started = Instant::now();
        // SAFETY: FFTW's planning calls on its own buffers of n values; the wisdom file name is
        // NUL-terminated; a missing wisdom file is reported by a 0 return, not an error.
        let plan = unsafe {
            (fftw.plan_with_nthreads)(args.threads as c_int);
            if let Some(w) = &wisdom {
                (fftw.import_wisdom)(w.as_ptr());
            }
            (fftw.plan_dft_1d)(n_c, input, output, FFTW_FORWARD, args.flags)
        };
        let plan_seconds = started.elapsed().as_secs_f64();
        let mut peer =
            Peer { name: name.into(), lib: lib.into(), fftw, plan, input, output, n, plan_seconds };
        if plan.is_null() {
            return Err(format!("{name}: fftw_plan_dft_1d failed"));
        }
        if let Some(w) = &wisdom {
            // SAFETY: as above.
            unsafe { (peer.fftw.export_wisdom)(w.as_ptr()) };
        }
        // Planning with MEASURE overwrote the input: fill it after.
        peer.input_mut().copy_from_slice(x);
        Ok(peer)
    }

    fn input_mut(&mut self) -> &mut [Complex64] {
        // SAFETY: `input` holds n values, owned by this peer and aliased by nothing else.
        unsafe { std::slice::from_raw_parts_mut(self.input, self.n) }
    }

    fn output(&self) -> &[Complex64] {
        // SAFETY: `output` holds n values written by FFTW; no call runs while it is borrowed.
        unsafe { std::slice::from_raw_parts(self.output, self.n) }
    }

    fn run(&self) {
        // SAFETY: a live plan over this peer's buffers.
        unsafe { (self.fftw.execute)(self.plan) }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // SAFETY: the plan and buffers were made by this library and are dropped once.
        unsafe {
            if !self.plan.is_null() {
                (self.fftw.destroy_plan)(self.plan);
            }
            (self.fftw.free)(self.input.cast());
            (self.fftw.free)(self.output.cast());
        }
    }
}

struct Args {
    input: PathBuf,
    peers: Vec<(String, String)>,
    threads: usize,
    procs: Option<usize>,
    rounds: usize,
    block: usize,
    flags: c_uint,
    flags_name: String,
    wisdom_dir: Option<PathBuf>,
}

fn parse() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut args = Args {
        input: PathBuf::new(),
        peers: Vec::new(),
        threads: 2,
        procs: None,
        rounds: 30,
        block: 20,
        flags: FFTW_MEASURE,
        flags_name: "measure".into(),
        wisdom_dir: None,
    };
    let mut input = None;
    while let Some(a) = it.next() {
        let mut value = |what: &str| it.next().ok_or(format!("{what} needs a value"));
        let number = |v: String, what: &str| {
            v.parse::<usize>().ok().filter(|&x| x > 0).ok_or(format!("{what}: not a count: {v}"))
        };
        match a.as_str() {
            "--peer" => {
                let v = value("--peer")?;
                let (name, lib) = v.split_once('=').ok_or("--peer wants NAME=LIB")?;
                args.peers.push((name.into(), lib.into()));
            }
            "--threads" => args.threads = number(value(&a)?, &a)?,
            "--procs" => args.procs = Some(number(value(&a)?, &a)?),
            "--rounds" => args.rounds = number(value(&a)?, &a)?,
            "--block" => args.block = number(value(&a)?, &a)?,
            "--wisdom-dir" => args.wisdom_dir = Some(value(&a)?.into()),
            "--flags" => {
                args.flags_name = value(&a)?;
                args.flags = match args.flags_name.as_str() {
                    "measure" => FFTW_MEASURE,
                    "patient" => FFTW_PATIENT,
                    "estimate" => FFTW_ESTIMATE,
                    other => {
                        return Err(format!("--flags: measure, patient or estimate, not {other}"));
                    }
                };
            }
            _ if a.starts_with('-') => return Err(format!("unknown option {a}")),
            _ => input = Some(PathBuf::from(a)),
        }
    }
    args.input = input.ok_or("usage: fft_interleaved INPUT.npy --peer NAME=LIB ...")?;
    if args.peers.is_empty() {
        return Err("at least one --peer NAME=LIB".into());
    }
    Ok(args)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `{"median": m, "min": a, "max": b}` of per-round values.
fn summary(v: &[f64]) -> serde_json::Value {
    let (lo, hi) = v.iter().fold((f64::INFINITY, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
    serde_json::json!({"median": median(v.to_vec()), "min": lo, "max": hi, "rounds": v.len()})
}

fn main() {
    if let Err(e) = run() {
        eprintln!("fft_interleaved: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let args = parse()?;
    let budget = sluice_io::Budget::new(u64::MAX / 4).map_err(|e| e.to_string())?;
    let loaded = fft::file::read_npy(&args.input, &budget).map_err(|e| e.to_string())?;
    let n = loaded.data.len();
    let mut input = fft::buffer(n).map_err(|e| e.to_string())?;
    input.copy_from_slice(&loaded.data);
    let mut output = fft::buffer(n).map_err(|e| e.to_string())?;
    // p as `sluice fft` chooses it (`fft::file::fft_file`).
    let cores = sluice_bsp::ExecConfig::default().root_p() as usize;
    let procs = args.procs.map_or_else(|| fft::candidate_procs(n, cores), |p| vec![p]);
    let mut plans = procs
        .iter()
        .map(|&p| Fft::new(n, p, Direction::Forward))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let best =
        fft::fastest(&plans, &input, &mut output, fft::PROBE_TIME).map_err(|e| e.to_string())?;
    let plan = plans.swap_remove(best);
    drop(plans);
    let mut peers = Vec::new();
    for (name, lib) in &args.peers {
        peers.push(Peer::new(name, lib, n, &args, &input)?);
    }
    // Every peer's output against sluice's.
    plan.process(&input, &mut output).map_err(|e| e.to_string())?;
    let norm = |v: &mut dyn Iterator<Item = Complex64>| v.map(|z| z.norm_sqr()).sum::<f64>().sqrt();
    let reference = norm(&mut output.iter().copied());
    let mut errors = serde_json::Map::new();
    for peer in &peers {
        peer.run();
        let diff =
            norm(&mut peer.output().iter().zip(output.iter()).map(|(a, b)| a - b)) / reference;
        if diff.is_nan() || diff >= 1e-10 {
            return Err(format!(
                "{}: relative L2 difference {diff:e} from sluice's output",
                peer.name
            ));
        }
        errors.insert(peer.name.clone(), diff.into());
    }
    // Contestant 0 is sluice, then the peers in order.
    let contestants = 1 + peers.len();
    let call = |c: usize, output: &mut [Complex64]| -> Result<Duration, String> {
        let t = Instant::now();
        if c == 0 {
            plan.process(&input, output).map_err(|e| e.to_string())?;
        } else {
            peers[c - 1].run();
        }
        Ok(t.elapsed())
    };
    for c in 0..contestants {
        for _ in 0..args.block {
            call(c, &mut output)?;
        }
    }
    let mut medians = vec![Vec::with_capacity(args.rounds); contestants];
    let started = Instant::now();
    for r in 0..args.rounds {
        for i in 0..contestants {
            let c = (r + i) % contestants;
            let mut times = Vec::with_capacity(args.block);
            for _ in 0..args.block {
                times.push(call(c, &mut output)?.as_secs_f64());
            }
            medians[c].push(median(times));
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let ratio =
        |peer: &[f64]| -> Vec<f64> { peer.iter().zip(&medians[0]).map(|(f, s)| f / s).collect() };
    let faster: Vec<f64> = (0..args.rounds)
        .map(|r| (1..contestants).map(|c| medians[c][r]).fold(f64::INFINITY, f64::min))
        .collect();
    let peers_json: Vec<serde_json::Value> = peers
        .iter()
        .enumerate()
        .map(|(i, p)| {
            serde_json::json!({
                "name": p.name, "lib": p.lib, "version": p.fftw.version,
                "plan_seconds": p.plan_seconds,
                "round_medians": medians[i + 1],
                "median": median(medians[i + 1].clone()),
                "ratio": summary(&ratio(&medians[i + 1])),
                "relative_l2_from_sluice": errors[&p.name],
            })
        })
        .collect();
    let report = serde_json::json!({
        "n": n, "p": plan.procs(), "threads": args.threads, "flags": args.flags_name,
        "rounds": args.rounds, "block": args.block, "seconds": seconds,
        "sluice": {"round_medians": medians[0], "median": median(medians[0].clone())},
        "peers": peers_json,
        "ratio_faster_peer": summary(&ratio(&faster)),
    });
    println!("{report}");
    Ok(())
}
