//! The timeline of a run as Chrome trace-event JSON (opens in Perfetto and `chrome://tracing`).
//!
//! # Contract
//! 1. Every span is a complete event (`"ph":"X"`) with `ts` and `dur` in microseconds since the
//!    run started, on the `tid` of the thread (or, for io_uring, the queue slot) it ran on.
//! 2. Spans on one `tid` never overlap, so viewers nest them correctly: io_uring reads in flight
//!    at once sit on separate `tid`s, one per ring slot.
//! 3. Every `tid` gets a `thread_name` metadata event (`"ph":"M"`).
//! 4. The file is written through [`OutputFile`]: a reader never sees half of it.

use std::io::Write;
use std::path::Path;

use crate::{Error, OutputFile};

/// One span.
#[derive(Debug, Clone)]
pub(crate) struct Span {
    pub(crate) name: &'static str,
    pub(crate) tid: u64,
    pub(crate) start_ns: u64,
    pub(crate) dur_ns: u64,
    /// The read (chunk) index the span worked on.
    pub(crate) chunk: usize,
}

/// Writes `spans` and the names of their threads to `path` (rules 1 to 4).
pub(crate) fn write(path: &Path, threads: &[(u64, String)], spans: &[Span]) -> Result<(), Error> {
    let err = |source| Error::Trace { path: path.to_path_buf(), source };
    let mut out = OutputFile::create(path).map_err(err)?;
    let mut events = Vec::with_capacity(threads.len() + spans.len());
    for (tid, name) in threads {
        events.push(serde_json::json!({
            "name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": name}
        }));
    }
    for s in spans {
        events.push(serde_json::json!({
            "name": s.name, "cat": "sluice", "ph": "X", "pid": 1, "tid": s.tid,
            "ts": s.start_ns as f64 / 1e3, "dur": s.dur_ns as f64 / 1e3,
            "args": {"chunk": s.chunk}
        }));
    }
    let doc = serde_json::json!({ "traceEvents": events, "displayTimeUnit": "ms" });
    serde_json::to_writer(&mut out, &doc).map_err(|e| err(e.into()))?;
    out.write_all(b"\n").map_err(err)?;
    out.commit().map_err(err)
}
