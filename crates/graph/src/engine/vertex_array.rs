//! [`VertexArray`]: per-vertex state, padded for the engine (contract rule 6) and held against
//! the graph's budget; the algorithms see only its first |V| entries.

use std::ops::{Deref, DerefMut};

use sluice_io::{Budget, Reservation};

use super::Graph;
use crate::Error;

/// One value per vertex: [`Graph::padded_len`] entries reserved from the graph's budget, read
/// and written as a slice of the first |V| (`Deref`); [`VertexArray::into_vec`] hands them over
/// at the end. For synchronous passes the array also keeps the previous pass's values (see
/// [`VertexArray::begin_pass`]), reserved when first needed.
#[derive(Debug)]
pub struct VertexArray<T> {
    what: String,
    values: Vec<T>,
    n: usize,
    budget: Budget,
    _held: Reservation,
    previous: Option<(Vec<T>, Reservation)>,
}

impl<T: Clone> VertexArray<T> {
    /// An array of copies of `init` for the vertices of `g`; `what` names it in budget errors.
    pub fn new(g: &Graph, what: &str, init: T) -> Result<VertexArray<T>, Error> {
        let len = g.padded_len();
        let held = g.budget().reserve(what, (len * std::mem::size_of::<T>()) as u64)?;
        Ok(VertexArray {
            what: what.to_string(),
            values: vec![init; len],
            n: g.num_vertices(),
            budget: g.budget().clone(),
            _held: held,
            previous: None,
        })
    }

    /// All [`Graph::padded_len`] entries, for kernels that index by decoded ids (rule 6: an id
    /// read from a corrupt block still indexes in bounds, and its checksum reports it).
    pub fn padded(&self) -> &[T] {
        &self.values
    }

    /// Starts a synchronous pass: copies the values into the previous-pass buffer and returns
    /// it (padded, to be read) beside the values (the first |V|, to be written).
    pub fn begin_pass(&mut self) -> Result<(&[T], &mut [T]), Error> {
        let n = self.n;
        let (prev, cur) = self.begin_padded()?;
        Ok((prev, &mut cur[..n]))
    }

    /// [`VertexArray::begin_pass`] with the current values padded too (for the engine).
    pub(super) fn begin_padded(&mut self) -> Result<(&[T], &mut [T]), Error> {
        let previous = match self.previous.take() {
            Some((mut prev, held)) => {
                prev.clone_from_slice(&self.values);
                (prev, held)
            }
            None => {
                let bytes = (self.values.len() * std::mem::size_of::<T>()) as u64;
                let what = format!("{} (previous pass)", self.what);
                (self.values.clone(), self.budget.reserve(&what, bytes)?)
            }
        };
        let (prev, _) = self.previous.insert(previous);
        Ok((prev, &mut self.values))
    }

    /// All entries, padded, for the engine to write.
    pub(super) fn padded_mut(&mut self) -> &mut [T] {
        &mut self.values
    }

    /// The first |V| values.
    pub fn into_vec(mut self) -> Vec<T> {
        self.values.truncate(self.n);
        std::mem::take(&mut self.values)
    }
}

impl<T> Deref for VertexArray<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.values[..self.n]
    }
}

impl<T> DerefMut for VertexArray<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.values[..self.n]
    }
}
