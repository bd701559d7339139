//! The BSP cost model beside what was observed: per superstep, h (the most bytes any process
//! sent or received), the predicted time h·g + ℓ from [`probe`](crate::Ctx::probe), and the
//! measured times (`notes/issue12.md`, item 5).
//!
//! # Contract
//! 1. Each process records its own supersteps with [`CostLog::record`]: the bytes it put
//!    (sent) and the bytes put into its memory (received) in that superstep, the seconds of
//!    its local work, and the seconds from its first put to the end of its sync.
//! 2. [`CostLog::summarize`] is collective (every process calls it with the same number of
//!    recorded supersteps) and returns the same table on every process: h = max over
//!    processes of max(sent, received); times are maxima over processes (the slowest process
//!    sets the pace of a superstep).
//! 3. The prediction uses g and ℓ for the section's p at the superstep's smallest message
//!    (`min_msg_bytes`, as recorded by process 0).

use serde::Serialize;

use crate::collectives::allreduce;
use crate::{Ctx, Error};

/// One superstep as one process saw it (rule 1).
#[derive(Debug, Clone, Copy, Default)]
struct Local {
    sent: u64,
    received: u64,
    min_msg: u64,
    work_s: f64,
    comm_s: f64,
}

/// One process's record of its supersteps.
#[derive(Debug, Clone, Default)]
pub struct CostLog {
    steps: Vec<Local>,
    starts_s: Vec<f64>,
}

/// One superstep of the whole section (rule 2).
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Superstep {
    /// The most bytes any process sent or received.
    pub h_bytes: u64,
    /// Bytes sent by all processes together.
    pub total_bytes: u64,
    /// h·g + ℓ, seconds.
    pub predicted_s: f64,
    /// The slowest process's time from its first put to the end of its sync, seconds.
    pub observed_s: f64,
    /// The slowest process's local work (the streaming pass) before the puts, seconds.
    pub work_s: f64,
    /// Seconds from the start of the first recorded superstep (on process 0's clock) to the
    /// start of this one's work, for traces.
    pub start_s: f64,
}

impl CostLog {
    /// An empty log.
    pub fn new() -> CostLog {
        CostLog::default()
    }

    /// Records one superstep (rule 1). `start_s` is when its work began, in seconds on any
    /// clock this process uses for all its records.
    pub fn record(
        &mut self,
        sent: u64,
        received: u64,
        min_msg_bytes: u64,
        start_s: f64,
        work_s: f64,
        comm_s: f64,
    ) {
        self.steps.push(Local { sent, received, min_msg: min_msg_bytes, work_s, comm_s });
        self.starts_s.push(start_s);
    }

    /// Supersteps recorded so far by this process.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Returns true if and only if nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// This process's own records: `(sent, received, work_s, comm_s, start_s)` per superstep,
    /// for a per-process trace track, `start_s` as recorded: on a clock shared by the
    /// processes when the caller measures it from an event common to all of them (the exit of
    /// a sync), so that the tracks of all processes line up on one timeline.
    pub fn local(&self) -> Vec<(u64, u64, f64, f64, f64)> {
        self.steps
            .iter()
            .zip(&self.starts_s)
            .map(|(s, &t)| (s.sent, s.received, s.work_s, s.comm_s, t))
            .collect()
    }

    /// The section's table (rule 2); collective.
    pub fn summarize(&self, ctx: &mut Ctx) -> Result<Vec<Superstep>, Error> {
        let k = self.steps.len();
        let mut bytes: Vec<u64> = self.steps.iter().map(|s| s.sent.max(s.received)).collect();
        let mut total: Vec<u64> = self.steps.iter().map(|s| s.sent).collect();
        let mut times: Vec<f64> = self.steps.iter().flat_map(|s| [s.work_s, s.comm_s]).collect();
        let t0 = self.starts_s.first().copied().unwrap_or(0.0);
        let mut starts: Vec<f64> = self.starts_s.iter().map(|t| t - t0).collect();
        let mut min_msg: Vec<u64> = self.steps.iter().map(|s| s.min_msg).collect();
        allreduce(ctx, &mut bytes, u64::max)?;
        allreduce(ctx, &mut total, |a, b| a + b)?;
        allreduce(ctx, &mut times, f64::max)?;
        allreduce(ctx, &mut starts, |a, _| a)?;
        allreduce(ctx, &mut min_msg, |a, _| a)?;
        let (machine, p) = (ctx.probe(), ctx.nprocs());
        Ok((0..k)
            .map(|i| {
                let m = min_msg[i].max(1) as usize;
                let h = bytes[i];
                Superstep {
                    h_bytes: h,
                    total_bytes: total[i],
                    predicted_s: h as f64 * machine.g(p, m) + machine.l(p, m),
                    observed_s: times[2 * i + 1],
                    work_s: times[2 * i],
                    start_s: starts[i],
                }
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Args, ExecConfig, exec_with};

    #[test]
    fn summarize_takes_the_busiest_process_and_agrees_everywhere() {
        let tables = std::sync::Mutex::new(Vec::new());
        exec_with(
            &ExecConfig::new(3, false),
            3,
            |ctx, s, _p, _args| {
                let mut log = CostLog::new();
                let s = u64::from(s);
                log.record(10 * s, 100 - s, 8, 0.0, 0.5 * s as f64, 0.1);
                log.record(7, 7 * s, 8, 1.0, 0.0, 0.2 * s as f64);
                let table = log.summarize(ctx).unwrap();
                tables.lock().unwrap().push(table);
            },
            Args::none(),
        )
        .unwrap();
        let tables = tables.into_inner().unwrap();
        assert_eq!(tables.len(), 3);
        assert!(tables.windows(2).all(|w| w[0] == w[1]));
        let t = &tables[0];
        // Process 0 received 100 bytes, process 2 sent 20 and received 98: h = 100.
        assert_eq!(t[0].h_bytes, 100);
        assert_eq!(t[0].total_bytes, 30);
        assert_eq!(t[1].h_bytes, 14);
        assert_eq!((t[0].work_s, t[1].observed_s), (1.0, 0.4));
        assert_eq!(t[1].start_s, 1.0);
        assert!(t.iter().all(|x| x.predicted_s > 0.0));
    }
}
