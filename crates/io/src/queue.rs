//! A small blocking multi-producer multi-consumer queue that can be closed.
//!
//! # Contract
//! 1. `push` never blocks and never fails: the queues of the pipeline hold at most the pool's
//!    buffer count, so they need no bound of their own.
//! 2. `pop` blocks until an item is there or the queue is closed; a closed, empty queue returns
//!    `None` at once, to every caller, forever.
//! 3. Items pushed after `close` are still handed out (buffers coming home after a cancel must
//!    not be lost), but `pop` never waits once the queue is closed.
//!
//! # Memory ordering
//! All state is behind one `Mutex`; its lock/unlock pairs order the items with everything the
//! producer wrote before `push` (the bytes of a filled block, for instance).

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};

/// See the module contract.
#[derive(Debug)]
pub(crate) struct Queue<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
}

#[derive(Debug)]
struct State<T> {
    items: VecDeque<T>,
    closed: bool,
}

impl<T> Queue<T> {
    pub(crate) fn new() -> Queue<T> {
        Queue {
            state: Mutex::new(State { items: VecDeque::new(), closed: false }),
            ready: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A panic while holding this lock cannot leave the deque half-updated (push_back and
        // pop_front do not unwind midway), so a poisoned lock is still consistent.
        self.state.lock().unwrap_or_else(|poison| poison.into_inner())
    }

    /// Appends `item` and wakes one waiter (rule 1).
    pub(crate) fn push(&self, item: T) {
        self.lock().items.push_back(item);
        self.ready.notify_one();
    }

    /// The oldest item, waiting for one unless the queue is closed (rule 2).
    pub(crate) fn pop(&self) -> Option<T> {
        let mut state = self.lock();
        loop {
            if let Some(item) = state.items.pop_front() {
                return Some(item);
            }
            if state.closed {
                return None;
            }
            state = self.ready.wait(state).unwrap_or_else(|poison| poison.into_inner());
        }
    }

    /// The oldest item if there is one; never waits.
    pub(crate) fn try_pop(&self) -> Option<T> {
        self.lock().items.pop_front()
    }

    /// Closes the queue and wakes every waiter (rules 2 and 3).
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn pop_on_closed_empty_queue_returns_none() {
        let q: Queue<u32> = Queue::new();
        q.push(1);
        q.close();
        assert_eq!(q.pop(), Some(1));
        assert_eq!(q.pop(), None);
        q.push(2);
        assert_eq!(q.pop(), Some(2), "items pushed after close are still handed out");
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn close_wakes_every_waiter() {
        let q: Arc<Queue<u32>> = Arc::new(Queue::new());
        let waiters: Vec<_> = (0..4)
            .map(|_| {
                let q = q.clone();
                std::thread::spawn(move || q.pop())
            })
            .collect();
        q.push(7);
        q.close();
        let got: Vec<_> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
        assert_eq!(got.iter().filter(|g| **g == Some(7)).count(), 1);
        assert_eq!(got.iter().filter(|g| g.is_none()).count(), 3);
    }

    #[test]
    fn stress_many_producers_and_consumers_lose_nothing() {
        let q: Arc<Queue<u64>> = Arc::new(Queue::new());
        let producers: Vec<_> = (0..4u64)
            .map(|p| {
                let q = q.clone();
                std::thread::spawn(move || (0..10_000u64).for_each(|i| q.push(p * 1_000_000 + i)))
            })
            .collect();
        let consumers: Vec<_> = (0..4)
            .map(|_| {
                let q = q.clone();
                std::thread::spawn(move || {
                    let mut sum = 0u64;
                    while let Some(x) = q.pop() {
                        sum += x;
                    }
                    sum
                })
            })
            .collect();
        producers.into_iter().for_each(|p| p.join().unwrap());
        q.close();
        let total: u64 = consumers.into_iter().map(|c| c.join().unwrap()).sum();
        let expected: u64 =
            (0..4u64).map(|p| (0..10_000u64).map(|i| p * 1_000_000 + i).sum::<u64>()).sum();
        assert_eq!(total, expected);
    }
}
