//! Settings of one run with every "choose" resolved, and checked.

use crate::pool::ALIGN;
use crate::{Backend, Config, DirectMode, Engine, Error};

use super::{DEFAULT_BLOCK_SIZE, DEFAULT_IO_THREADS, DEFAULT_QUEUE_DEPTH, MAX_BLOCK_SIZE};

/// Most reads in flight per I/O thread.
const MAX_QUEUE_DEPTH: usize = 4096;

/// Smallest queue depth a small budget shrinks the default to (two reads in flight still overlap
/// a read with its successor's submission).
const MIN_FIT_QUEUE_DEPTH: usize = 2;
/// Smallest block size a small budget shrinks the default to: 64 KiB reads still reach most of
/// a disk's bandwidth at queue depth 2 and are 16 pages, so O_DIRECT alignment holds.
const MIN_FIT_BLOCK_SIZE: usize = 64 << 10;

/// Settings with every "choose" resolved.
#[derive(Debug, Clone)]
pub(super) struct Settings {
    pub(super) engine: Engine,
    pub(super) backend: Backend,
    pub(super) direct: DirectMode,
    pub(super) block_size: usize,
    pub(super) queue_depth: usize,
    pub(super) io_threads: usize,
    pub(super) workers: usize,
    pub(super) inject: Option<u64>,
}

impl Settings {
    pub(super) fn resolve(config: &Config) -> Result<Settings, Error> {
        let pick = |v: usize, d: usize| if v == 0 { d } else { v };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let inject = match config.inject_read_error {
            Some(at) => Some(at),
            None => match std::env::var("SLUICE_INJECT_READ_ERROR") {
                Ok(text) => Some(
                    text.trim()
                        .parse::<u64>()
                        .map_err(|_| Error::InjectOffset { value: text.clone() })?,
                ),
                Err(_) => None,
            },
        };
        let s = Settings {
            engine: config.engine,
            backend: config.backend,
            direct: config.direct,
            block_size: pick(config.block_size, DEFAULT_BLOCK_SIZE),
            queue_depth: pick(config.queue_depth, DEFAULT_QUEUE_DEPTH),
            io_threads: pick(config.io_threads, DEFAULT_IO_THREADS),
            workers: pick(config.workers, cores),
            inject,
        };
        if !s.block_size.is_multiple_of(ALIGN) || s.block_size > MAX_BLOCK_SIZE {
            return Err(Error::BlockSize { block_size: s.block_size });
        }
        if s.queue_depth > MAX_QUEUE_DEPTH {
            return Err(Error::QueueDepth { depth: s.queue_depth, max: MAX_QUEUE_DEPTH });
        }
        Ok(s)
    }

    /// Makes the pool smaller by shrinking a default the user did not set: the queue depth
    /// halves down to [`MIN_FIT_QUEUE_DEPTH`], then the block size down to
    /// [`MIN_FIT_BLOCK_SIZE`]. Returns true if and only if something shrank.
    pub(super) fn shrink(&mut self, config: &Config) -> bool {
        if config.queue_depth == 0 && self.queue_depth > MIN_FIT_QUEUE_DEPTH {
            self.queue_depth = (self.queue_depth / 2).max(MIN_FIT_QUEUE_DEPTH);
            true
        } else if config.block_size == 0 && self.block_size > MIN_FIT_BLOCK_SIZE {
            self.block_size = (self.block_size / 2).max(MIN_FIT_BLOCK_SIZE);
            true
        } else {
            false
        }
    }
}
