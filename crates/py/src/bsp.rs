//! `sluice.bsp.exec(p, fn, *args)`: a Python function run as an SPMD program on the threads
//! backend of `sluice_bsp`, each process a thread, NumPy arrays registered as memory slots.
//!
//! # Contract
//! 1. Process `s` calls `fn(ctx, *args)` on its own thread; `exec` returns the list of the
//!    return values by pid. The GIL serialises the Python code of all processes: this is for
//!    correctness and teaching (BSP programs written and checked in Python), not for speed.
//! 2. `ctx.register(array)` makes a C-contiguous writable NumPy array a global slot (collective:
//!    every process registers in the same order); `ctx.put(src, slot, pid, offset)` copies the
//!    elements of `src` into `slot` of process `pid` from element `offset`;
//!    `ctx.get(pid, slot, offset, dst_slot, dst_offset, count)` copies `count` elements of
//!    `slot` of `pid` into the local `dst_slot`; both take effect at `ctx.sync()` (BSP).
//! 3. Registered arrays are copied into Rust-owned slots before each sync and back after it
//!    (copy-in/copy-out: no raw pointer into NumPy memory, no `unsafe`); a put's source is
//!    copied when the put is queued, so it may change at once. What a program sees equals LPF
//!    semantics for programs that obey them.
//! 4. Runs on the `Checked` backend: a put or get that overlaps another message's read or write
//!    of the same bytes in one superstep, a bad pid, slot or bound raise `BspError`. A Python
//!    exception in `fn` ends that process; its peers' next sync fails, and `exec` raises the
//!    exception of the lowest pid that raised one (else `BspError`).
//!
//! 5. Ctrl-C: the caller's thread waits with the GIL released and runs Python's signal handlers
//!    every 50 ms ([`crate::wait`]). When one raises (`KeyboardInterrupt`), it sets the cancel
//!    flag and raises `KeyboardInterrupt` in every process's Python thread still inside `fn`
//!    ([`crate::async_exc`]): one in Python code stops at once, one waiting for a BSP call gets
//!    it when the call returns, and every BSP call after the flag raises it too. A process that
//!    ends makes its peers' pending or next sync fail (the threads backend never waits for a
//!    process that is not coming), so none waits forever; `exec` joins every thread, then
//!    raises the caller's `KeyboardInterrupt`. A process inside one long C call (a large NumPy
//!    operation) stops when that call returns.
//!
//! # Threads
//! Each BSP process thread runs the BSP calls on its `Ctx`, and a second thread per process runs
//! the Python function, which sends each call over a channel and waits (GIL released) for the
//! answer: the `Ctx` never leaves its thread. The section runs on one more worker thread, so the
//! caller's thread stays free to see signals (rule 5); all are joined before `exec` returns.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use sluice_bsp::{Args, Ctx, ExecConfig, MemSlot, Pid};

use crate::errors::{BspError, InputError};
use crate::wait::{self, Watch};

/// Register and message capacities set in the prologue (LPF's canonical first sync).
const MAX_REGS: usize = 1 << 12;
const MAX_MSGS: usize = 1 << 16;

/// A BSP call, sent by the Python thread to its process thread.
enum Cmd {
    Register(usize),
    Put { src: Vec<u8>, slot: usize, pid: Pid, offset: usize },
    Get { pid: Pid, slot: usize, offset: usize, dst: usize, dst_offset: usize, len: usize },
    Sync(Vec<Vec<u8>>),
    Done,
}

/// The answer: a slot index, the slots' bytes after a sync, or the BSP error's message.
type Reply = Result<Option<Vec<Vec<u8>>>, String>;

/// The cancel flag and the Python threads inside `fn`, by `threading.get_ident()` (rule 5).
#[derive(Debug, Default)]
struct Interrupt {
    cancel: AtomicBool,
    running: Mutex<Vec<u64>>,
}

impl Interrupt {
    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// Raises `KeyboardInterrupt` in every thread inside `fn` (the flag is already set).
    fn interrupt(&self, py: Python<'_>) {
        let exc = py.get_type::<PyKeyboardInterrupt>().into_any();
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        for &ident in running.iter() {
            crate::async_exc::raise_in(py, ident, &exc);
        }
    }

    /// Calls `f(*args)` as the Python thread `ident`, visible to [`Interrupt::interrupt`]
    /// meanwhile. The flag is read after the thread is listed: either the caller's interrupt
    /// sees the thread or the thread sees the flag.
    fn call(&self, py: Python<'_>, f: &PyObject, args: Bound<'_, PyTuple>) -> PyResult<PyObject> {
        let ident: u64 = py.import("threading")?.getattr("get_ident")?.call0()?.extract()?;
        self.running.lock().unwrap_or_else(|e| e.into_inner()).push(ident);
        let out = if self.cancelled() { Err(interrupted()) } else { f.call1(py, args) };
        self.running.lock().unwrap_or_else(|e| e.into_inner()).retain(|&i| i != ident);
        out
    }
}

fn interrupted() -> PyErr {
    PyKeyboardInterrupt::new_err("bsp.exec was interrupted")
}

/// The context object a process's function gets (rule 2).
#[pyclass(module = "sluice.bsp", name = "Context", frozen)]
pub(crate) struct Context {
    /// This process's id, 0..nprocs.
    #[pyo3(get)]
    pid: u32,
    /// Number of processes.
    #[pyo3(get)]
    nprocs: u32,
    link: Mutex<(Sender<Cmd>, Receiver<Reply>)>,
    stop: Arc<Interrupt>,
    /// Registered arrays with their item size, by slot index.
    arrays: Mutex<Vec<(PyObject, usize)>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Context {{ pid: {}, nprocs: {} }}", self.pid, self.nprocs)
    }
}

fn bsp_err(what: &str, e: impl std::fmt::Display) -> PyErr {
    BspError::new_err(format!("{what}: {e}"))
}

impl Context {
    /// Sends `cmd` and waits for the answer with the GIL released.
    /// After Ctrl-C (rule 5) it raises `KeyboardInterrupt` instead, before or after the call.
    fn call(&self, py: Python<'_>, what: &str, cmd: Cmd) -> PyResult<Option<Vec<Vec<u8>>>> {
        if self.stop.cancelled() {
            return Err(interrupted());
        }
        let reply = py.allow_threads(|| {
            let link = self.link.lock().map_err(|_| "context poisoned".to_string())?;
            link.0.send(cmd).map_err(|_| "the process has ended".to_string())?;
            link.1.recv().map_err(|_| "the process has ended".to_string())?
        });
        if self.stop.cancelled() {
            return Err(interrupted());
        }
        reply.map_err(|e| bsp_err(what, e))
    }

    /// The item size of registered slot `slot` (an index error names the call).
    fn itemsize(&self, what: &str, slot: usize) -> PyResult<usize> {
        let arrays = self.arrays.lock().map_err(|_| bsp_err(what, "context poisoned"))?;
        arrays.get(slot).map(|a| a.1).ok_or_else(|| {
            InputError::new_err(format!(
                "{what}: slot {slot} is not registered ({} are)",
                arrays.len()
            ))
        })
    }
}

/// `x` as a C-contiguous NumPy array (writable if `writable`), and its item size.
fn contiguous<'py>(
    py: Python<'py>,
    what: &str,
    x: &Bound<'py, PyAny>,
    writable: bool,
) -> PyResult<(Bound<'py, PyAny>, usize)> {
    let np = py.import("numpy")?;
    if !x.is_instance(&np.getattr("ndarray")?)? {
        return Err(InputError::new_err(format!("{what}: expected a NumPy array")));
    }
    let flags = x.getattr("flags")?;
    if !flags.getattr("c_contiguous")?.extract::<bool>()? {
        return Err(InputError::new_err(format!("{what}: the array is not contiguous")));
    }
    if writable && !flags.getattr("writeable")?.extract::<bool>()? {
        return Err(InputError::new_err(format!("{what}: the array is read-only")));
    }
    Ok((x.clone(), x.getattr("itemsize")?.extract()?))
}

#[pymethods]
impl Context {
    /// Registers `array` (C-contiguous, writable) as the next global slot; returns its index.
    /// Collective: every process registers its arrays in the same order. Remote puts and gets
    /// see and change it from the next sync on.
    fn register(&self, py: Python<'_>, array: Bound<'_, PyAny>) -> PyResult<usize> {
        let (a, itemsize) = contiguous(py, "register", &array, true)?;
        let nbytes: usize = a.getattr("nbytes")?.extract()?;
        self.call(py, "register", Cmd::Register(nbytes))?;
        let mut arrays = self.arrays.lock().map_err(|_| bsp_err("register", "poisoned"))?;
        arrays.push((a.unbind(), itemsize));
        Ok(arrays.len() - 1)
    }

    /// Queues a copy of every element of `src` (a contiguous array of the slot's item size)
    /// into `slot` of process `pid`, from element `offset`; done at the next sync.
    #[pyo3(signature = (src, slot, pid, offset=0))]
    fn put(
        &self,
        py: Python<'_>,
        src: Bound<'_, PyAny>,
        slot: usize,
        pid: Pid,
        offset: usize,
    ) -> PyResult<()> {
        let (a, _) = contiguous(py, "put", &src, false)?;
        let item = self.itemsize("put", slot)?;
        let bytes: Vec<u8> = a.call_method0("tobytes")?.extract()?;
        if !bytes.len().is_multiple_of(item) {
            return Err(InputError::new_err(format!(
                "put: {} bytes of source are not whole items of {item} bytes",
                bytes.len()
            )));
        }
        self.call(py, "put", Cmd::Put { src: bytes, slot, pid, offset: offset * item })?;
        Ok(())
    }

    /// Queues a copy of `count` elements of `slot` of process `pid`, from element `offset`,
    /// into the local `dst_slot` from element `dst_offset`; done at the next sync.
    #[pyo3(signature = (pid, slot, offset, dst_slot, dst_offset, count))]
    #[allow(clippy::too_many_arguments)]
    fn get(
        &self,
        py: Python<'_>,
        pid: Pid,
        slot: usize,
        offset: usize,
        dst_slot: usize,
        dst_offset: usize,
        count: usize,
    ) -> PyResult<()> {
        let item = self.itemsize("get", slot)?;
        self.itemsize("get", dst_slot)?;
        let cmd = Cmd::Get {
            pid,
            slot,
            offset: offset * item,
            dst: dst_slot,
            dst_offset: dst_offset * item,
            len: count * item,
        };
        self.call(py, "get", cmd)?;
        Ok(())
    }

    /// Ends the superstep: every queued put and get is complete when it returns, and the
    /// registered arrays hold what arrived.
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        let arrays: Vec<(Py<PyAny>, usize)> = {
            let a = self.arrays.lock().map_err(|_| bsp_err("sync", "poisoned"))?;
            a.iter().map(|(x, i)| (x.clone_ref(py), *i)).collect()
        };
        let mut bytes = Vec::with_capacity(arrays.len());
        for (a, _) in &arrays {
            bytes.push(a.bind(py).call_method0("tobytes")?.extract::<Vec<u8>>()?);
        }
        let after = self.call(py, "sync", Cmd::Sync(bytes))?.unwrap_or_default();
        let np = py.import("numpy")?;
        for ((a, _), b) in arrays.iter().zip(after) {
            let flat = a.bind(py).call_method1("reshape", (-1,))?.call_method1("view", ("u1",))?;
            let src = np.call_method1("frombuffer", (pyo3::types::PyBytes::new(py, &b), "u1"))?;
            flat.set_item(pyo3::types::PySlice::full(py), src)?;
        }
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!("sluice.bsp.Context(pid={}, nprocs={})", self.pid, self.nprocs)
    }
}

/// Runs the BSP calls of one process on its `ctx` until the Python side is done (rule 3).
fn serve(ctx: &mut Ctx, rx: &Receiver<Cmd>, tx: &Sender<Reply>) {
    let mut slots: Vec<MemSlot> = Vec::new();
    let mut sources: Vec<MemSlot> = Vec::new();
    let msg = |e: sluice_bsp::Error| crate::errors::message(&e, None);
    while let Ok(cmd) = rx.recv() {
        let slot = |i: usize| slots.get(i).copied().ok_or(format!("slot {i} is not registered"));
        let reply: Reply = match cmd {
            Cmd::Done => return,
            Cmd::Register(len) => ctx
                .alloc_global(len)
                .map(|s| {
                    slots.push(s);
                    None
                })
                .map_err(msg),
            Cmd::Put { src, slot: i, pid, offset } => match slot(i) {
                Err(e) => Err(e),
                Ok(dst) => (|| {
                    let s = ctx.alloc_local(src.len())?;
                    sources.push(s);
                    ctx.slot_mut(s)?.copy_from_slice(&src);
                    ctx.put(s, 0, pid, dst, offset, src.len()).map(|()| None)
                })()
                .map_err(msg),
            },
            Cmd::Get { pid, slot: i, offset, dst, dst_offset, len } => match (slot(i), slot(dst)) {
                (Ok(src), Ok(dst)) => {
                    ctx.get(pid, src, offset, dst, dst_offset, len).map(|()| None).map_err(msg)
                }
                (Err(e), _) | (_, Err(e)) => Err(e),
            },
            Cmd::Sync(arrays) => (|| {
                for (s, b) in slots.iter().zip(&arrays) {
                    let dst = ctx.slot_mut(*s)?;
                    let k = dst.len().min(b.len()); // equal: NumPy cannot resize a held array
                    dst[..k].copy_from_slice(&b[..k]);
                }
                ctx.sync()?;
                for s in sources.drain(..) {
                    ctx.deregister(s)?;
                }
                let mut after = Vec::with_capacity(slots.len());
                for s in &slots {
                    after.push(ctx.slot(*s)?.to_vec());
                }
                Ok(Some(after))
            })()
            .map_err(msg),
        };
        if tx.send(reply).is_err() {
            return;
        }
    }
}

/// Runs `f(ctx, *args)` as an SPMD program on `p` threads; see the module contract.
#[pyfunction]
#[pyo3(signature = (p, f, *args))]
pub(crate) fn exec<'py>(
    py: Python<'py>,
    p: Pid,
    f: Bound<'py, PyAny>,
    args: Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyList>> {
    if p == 0 {
        return Err(InputError::new_err("exec: p must be at least 1"));
    }
    if !f.is_callable() {
        return Err(InputError::new_err("exec: fn must be callable"));
    }
    let (f, args) = (f.unbind(), args.unbind());
    let results: Vec<Mutex<Option<PyResult<PyObject>>>> =
        (0..p).map(|_| Mutex::new(None)).collect();
    let config = ExecConfig { max_p: Some(p), checked: true };
    let stop = Arc::new(Interrupt::default());
    let counter = AtomicU64::new(0);
    let watch = Watch { cancel: &stop.cancel, counter: &counter, total: 0, import: None };
    let ran = wait::run_hooked(
        py,
        watch,
        None,
        |py| stop.interrupt(py),
        || {
            sluice_bsp::exec_with(
                &config,
                p,
                |ctx, s, n, _| {
                    let (to_ctx, from_py) = channel::<Cmd>();
                    let (to_py, from_ctx) = channel::<Reply>();
                    let prologue = ctx
                        .resize_memory_register(MAX_REGS)
                        .and_then(|()| ctx.resize_message_queue(MAX_MSGS))
                        .and_then(|()| ctx.sync());
                    std::thread::scope(|scope| {
                        let py_side = scope.spawn(|| {
                            Python::with_gil(|py| -> PyResult<PyObject> {
                                prologue.as_ref().map_err(|e| bsp_err("exec", e))?;
                                let c = Context {
                                    pid: s,
                                    nprocs: n,
                                    link: Mutex::new((to_ctx, from_ctx)),
                                    stop: Arc::clone(&stop),
                                    arrays: Mutex::new(Vec::new()),
                                };
                                let c = Py::new(py, c)?;
                                let mut call_args = vec![c.clone_ref(py).into_any()];
                                call_args.extend(args.bind(py).iter().map(Bound::unbind));
                                let out = stop.call(py, &f, PyTuple::new(py, call_args)?);
                                // The process thread stops serving (the object may outlive the call).
                                if let Ok(link) = c.get().link.lock() {
                                    let _ = link.0.send(Cmd::Done);
                                }
                                out
                            })
                        });
                        if prologue.is_ok() {
                            serve(ctx, &from_py, &to_py);
                        }
                        drop(to_py);
                        let r = py_side.join().unwrap_or_else(|_| {
                            Err(pyo3::panic::PanicException::new_err("a bsp.exec thread panicked"))
                        });
                        *results[s as usize].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                    });
                },
                Args::none(),
            )
        },
    )?;
    let mut out = Vec::with_capacity(p as usize);
    let mut first_err: Option<PyErr> = None;
    for r in results {
        match r.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(Ok(v)) => out.push(v),
            Some(Err(e)) => {
                let is_bsp = e.is_instance_of::<BspError>(py);
                if first_err.as_ref().is_none_or(|f| f.is_instance_of::<BspError>(py) && !is_bsp) {
                    first_err = Some(e);
                }
                out.push(py.None());
            }
            None => out.push(py.None()),
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    ran.map_err(|e| bsp_err("exec", crate::errors::message(&e, None)))?;
    PyList::new(py, out)
}
