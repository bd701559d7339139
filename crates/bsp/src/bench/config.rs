//! What `sluice bsp bench` measures ([`BenchConfig`]) and how much memory that takes: the sizes
//! shrink to fit the `--memory` budget, and a `p` no size makes fit is refused with the numbers
//! (issue 17 item 13: `--quick --p 64` reached 23.2 GiB RSS, `--p 100000` was OOM-killed).

use serde::{Deserialize, Serialize};

use crate::Pid;

/// What to measure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BenchConfig {
    /// Processes.
    pub p: Pid,
    /// Repetitions of each g/ℓ estimate (for the confidence intervals), ≥ 2.
    pub reps: usize,
    /// Largest h-relation per process, in bytes, for the g estimates.
    pub max_h_bytes: usize,
    /// Bytes each thread copies for r and for the big put.
    pub memcpy_bytes: usize,
    /// Messages per process in the all-to-all.
    pub alltoall_msgs: usize,
    /// Empty syncs timed per repetition.
    pub empty_syncs: usize,
    /// Word sizes for g and ℓ.
    pub word_sizes: Vec<usize>,
    /// Round trips of the cache-line ping-pong.
    pub pingpong_rounds: u64,
}

impl BenchConfig {
    /// The full run (tens of seconds): 64 MiB copies, h up to 64 MiB, 10 repetitions.
    pub fn full(p: Pid) -> BenchConfig {
        BenchConfig {
            p,
            reps: 10,
            max_h_bytes: 64 << 20,
            memcpy_bytes: 64 << 20,
            alltoall_msgs: 1 << 21,
            empty_syncs: 20_000,
            word_sizes: vec![8, 64, 1024, 1 << 20],
            pingpong_rounds: 1_000_000,
        }
    }

    /// A quick run (a few seconds) with the same structure.
    pub fn quick(p: Pid) -> BenchConfig {
        BenchConfig {
            p,
            reps: 5,
            max_h_bytes: 8 << 20,
            memcpy_bytes: 64 << 20,
            alltoall_msgs: 1 << 19,
            empty_syncs: 5_000,
            word_sizes: vec![8, 64, 1024, 1 << 20],
            pingpong_rounds: 200_000,
        }
    }

    /// A tiny run for tests (well under a second).
    pub fn tiny(p: Pid) -> BenchConfig {
        BenchConfig {
            p,
            reps: 2,
            max_h_bytes: 64 << 10,
            memcpy_bytes: 1 << 20,
            alltoall_msgs: 1 << 10,
            empty_syncs: 50,
            word_sizes: vec![8, 1024],
            pingpong_rounds: 1_000,
        }
    }
}

/// Bytes one queued message can hold in the threads backend: a 24-byte request in a vector that
/// may have doubled, in both parities of its pair queue (`threads/queues.rs`).
const QUEUED_MSG_BYTES: u64 = 96;
/// Bytes of one ordered pair's queues (two cache-padded cells of 128 bytes): `p²` of them.
pub(super) const PAIR_BYTES: u64 = 256;
/// Bytes a process's thread keeps resident for its stack and bookkeeping.
const THREAD_BYTES: u64 = 64 << 10;

impl BenchConfig {
    /// Peak bytes a run of this configuration allocates (issue 17 item 13): the phases run one
    /// after the other and free their buffers, but message-queue capacity stays, so the peak is
    /// the pair queues, the threads, the largest phase's buffers and the largest queue.
    pub fn memory_bytes(&self) -> u64 {
        let p = u64::from(self.p.max(1));
        let peers = (p - 1).max(1);
        let n_max = |w: usize| {
            let n = (self.max_h_bytes / w.max(1)) as u64;
            n.max(4 * p) / peers * peers
        };
        let most_msgs = self
            .word_sizes
            .iter()
            .map(|&w| n_max(w))
            .chain([self.alltoall_msgs as u64])
            .max()
            .unwrap_or(0);
        let exchange = self
            .word_sizes
            .iter()
            .map(|&w| 2 * n_max(w) * w as u64)
            .chain([16 * self.alltoall_msgs as u64, 2 * self.memcpy_bytes as u64])
            .max()
            .unwrap_or(0);
        let phase = (p * 2 * self.memcpy_bytes as u64)
            .max(2 * self.max_h_bytes.min(64 << 20) as u64)
            .max(p.saturating_mul(exchange));
        p.saturating_mul(p)
            .saturating_mul(PAIR_BYTES)
            .saturating_add(p * THREAD_BYTES)
            .saturating_add(phase)
            .saturating_add(p.saturating_mul(most_msgs).saturating_mul(QUEUED_MSG_BYTES))
    }

    /// Shrinks the sizes (h-relations, all-to-all messages, copies: halving each in turn down to
    /// 64 KiB, 1024 and 1 MiB; then the largest word sizes, down to one) until [`memory_bytes`](Self::memory_bytes) is at most `budget`.
    /// Returns true if and only if it fits; otherwise the sizes are at their smallest and
    /// `memory_bytes` is the least a run with this `p` needs.
    pub fn fit(&mut self, budget: u64) -> bool {
        while self.memory_bytes() > budget {
            if self.max_h_bytes > 64 << 10 {
                self.max_h_bytes /= 2;
            } else if self.alltoall_msgs > 1024 {
                self.alltoall_msgs /= 2;
            } else if self.memcpy_bytes > 1 << 20 {
                self.memcpy_bytes /= 2;
            } else if self.word_sizes.len() > 1 {
                // A word of w bytes needs h ≥ 4p words per process: drop the largest word.
                let largest = self.word_sizes.iter().copied().max().unwrap_or(0);
                self.word_sizes.retain(|&w| w != largest);
            } else {
                return false;
            }
        }
        true
    }
}
