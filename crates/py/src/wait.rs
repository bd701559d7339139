//! Long calls: the work runs on a worker thread with the GIL released; the calling thread waits,
//! reports progress and watches for Ctrl-C.
//!
//! # Contract
//! 1. [`run`] resets the cancel flag and the progress counter, starts `job` on a scoped worker
//!    thread and releases the GIL while it waits, waking every [`TICK`] to report progress and
//!    to run Python's signal handlers (`Python::check_signals`).
//! 2. When a handler raises (Ctrl-C raises `KeyboardInterrupt`) or the progress callback raises,
//!    [`run`] sets the cancel flag, which the block pipeline checks after every block
//!    (`sluice_io::PipelineBuilder::cancel`), joins the worker, and returns that exception: no
//!    thread is left running, and the job's own error (`Cancelled`) is dropped. A job whose
//!    threads run Python code ([`run_hooked`]: `bsp.exec`) also gets a hook called right after
//!    the flag is set, which stops that code.
//! 3. Progress is a callable `progress(done, total)` (bytes read so far, bytes the call will read
//!    about), called on the calling thread with the GIL held; `progress=True` shows a `tqdm` bar
//!    when tqdm is installed and nothing otherwise. An import ([`Watch::import`]) calls
//!    `progress(done, total, phase)` with the pass running ("vertices", "bucketing", "blocks",
//!    None before and after), and the tqdm bar shows the pass as its description.
//! 4. A panic on the worker becomes `pyo3_runtime.PanicException` (a bug, never a hang).
//!
//! # Threads and costs
//! One extra thread per call (the job itself spreads over the pipeline's threads). The wait adds
//! at most one wake-up per [`TICK`] to the call and no latency to its end (the worker notifies).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use pyo3::panic::PanicException;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// How often the waiting thread wakes to check signals and report progress.
pub(crate) const TICK: Duration = Duration::from_millis(50);

/// What a call is watched with.
#[derive(Debug)]
pub(crate) struct Watch<'a> {
    /// The pipeline's cancel flag.
    pub(crate) cancel: &'a AtomicBool,
    /// The pipeline's progress counter (bytes of finished blocks).
    pub(crate) counter: &'a AtomicU64,
    /// Bytes the call will read, about.
    pub(crate) total: u64,
    /// An import's pass and bytes of in-memory edges read (rule 3).
    pub(crate) import: Option<&'a sluice_graph::import::Progress>,
}

impl Watch<'_> {
    /// Bytes done: the pipeline's counter and the in-memory edges read.
    fn done(&self) -> u64 {
        self.counter.load(Ordering::Relaxed) + self.import.map_or(0, |p| p.bytes())
    }

    /// The import's pass, as `Some(name)` (None between passes); `None` for other calls.
    fn phase(&self) -> Option<Option<&'static str>> {
        self.import.map(|p| p.phase().map(|ph| ph.name()))
    }
}

/// The worker's "done" flag, set on every exit (a panic included) by its drop.
struct Done<'a>(&'a (Mutex<bool>, Condvar));

impl Drop for Done<'_> {
    fn drop(&mut self) {
        *self.0.0.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.0.1.notify_all();
    }
}

/// The progress reporter of rule 3.
enum Reporter<'py> {
    None,
    Callback(Bound<'py, PyAny>),
    Tqdm { bar: Bound<'py, PyAny>, shown: u64, phase: Option<&'static str> },
}

impl<'py> Reporter<'py> {
    fn new(py: Python<'py>, progress: Option<&Bound<'py, PyAny>>, total: u64) -> PyResult<Self> {
        let Some(p) = progress.filter(|p| !p.is_none()) else { return Ok(Reporter::None) };
        if p.is_callable() {
            return Ok(Reporter::Callback(p.clone()));
        }
        if !p.is_truthy()? {
            return Ok(Reporter::None);
        }
        let Ok(tqdm) = py.import("tqdm") else { return Ok(Reporter::None) };
        let kw = PyDict::new(py);
        kw.set_item("total", total)?;
        kw.set_item("unit", "B")?;
        kw.set_item("unit_scale", true)?;
        let bar = tqdm.getattr("tqdm")?.call((), Some(&kw))?;
        Ok(Reporter::Tqdm { bar, shown: 0, phase: None })
    }

    fn report(&mut self, watch: &Watch<'_>) -> PyResult<()> {
        let (done, total) = (watch.done(), watch.total);
        match self {
            Reporter::None => Ok(()),
            Reporter::Callback(f) => match watch.phase() {
                Some(phase) => f.call1((done, total, phase)).map(drop),
                None => f.call1((done, total)).map(drop),
            },
            Reporter::Tqdm { bar, shown, phase } => {
                if let Some(now) = watch.phase().flatten()
                    && *phase != Some(now)
                {
                    bar.call_method1("set_description", (now,))?;
                    *phase = Some(now);
                }
                let done = done.min(total);
                if done > *shown {
                    bar.call_method1("update", (done - *shown,))?;
                    *shown = done;
                }
                Ok(())
            }
        }
    }

    fn close(&self) -> PyResult<()> {
        if let Reporter::Tqdm { bar, .. } = self {
            bar.call_method0("close")?;
        }
        Ok(())
    }
}

/// Runs `job` as rule 1 says; see the module contract.
pub(crate) fn run<'py, T, F>(
    py: Python<'py>,
    watch: Watch<'_>,
    progress: Option<&Bound<'py, PyAny>>,
    job: F,
) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> T + Send,
{
    run_hooked(py, watch, progress, |_| {}, job)
}

/// [`run`], calling `on_cancel` (GIL held) right after it sets the cancel flag (rule 2): for jobs
/// whose threads run Python code, which the flag alone cannot stop.
pub(crate) fn run_hooked<'py, T, F, C>(
    py: Python<'py>,
    watch: Watch<'_>,
    progress: Option<&Bound<'py, PyAny>>,
    on_cancel: C,
    job: F,
) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> T + Send,
    C: FnOnce(Python<'py>),
{
    watch.cancel.store(false, Ordering::Relaxed);
    watch.counter.store(0, Ordering::Relaxed);
    let mut reporter = Reporter::new(py, progress, watch.total)?;
    let done = (Mutex::new(false), Condvar::new());
    let outcome = std::thread::scope(|s| {
        let worker = std::thread::Builder::new()
            .name("sluice-py-call".into())
            .spawn_scoped(s, || {
                let _done = Done(&done);
                job()
            })
            .map_err(|e| PanicException::new_err(format!("cannot start a worker thread: {e}")))?;
        let mut stop: Option<PyErr> = None;
        let mut on_cancel = Some(on_cancel);
        loop {
            let finished = py.allow_threads(|| {
                let guard = done.0.lock().unwrap_or_else(|p| p.into_inner());
                let (guard, _) = done
                    .1
                    .wait_timeout_while(guard, TICK, |d| !*d)
                    .unwrap_or_else(|p| p.into_inner());
                *guard
            });
            if finished {
                break;
            }
            let checked = reporter.report(&watch).and_then(|()| py.check_signals());
            if let Err(e) = checked {
                watch.cancel.store(true, Ordering::Relaxed);
                if let Some(hook) = on_cancel.take() {
                    hook(py);
                }
                stop = Some(e);
                break;
            }
        }
        let joined = py.allow_threads(|| worker.join());
        match (stop, joined) {
            (Some(e), _) => Err(e),
            (None, Ok(value)) => Ok(value),
            (None, Err(payload)) => Err(PanicException::new_err(panic_text(&*payload))),
        }
    });
    let last = match &outcome {
        Ok(_) => reporter.report(&watch),
        Err(_) => Ok(()),
    };
    let closed = reporter.close();
    let value = outcome?;
    last.and(closed).map(|()| value)
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a sluice worker thread panicked".to_string()
    }
}
