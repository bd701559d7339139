//! The canonical combine tree over block indices: the order in which partial results combine,
//! the same whether one process or many read the blocks (issue 12: "the same bits").
//!
//! # Contract
//! 1. Leaf `i` is block `i` of the whole stream. Node `(level, index)` covers leaves
//!    `index·2^level .. (index+1)·2^level`; its value is `combine(left child, right child)`.
//!    The result over leaves `0..n` is the root of the smallest such tree covering `0..n`,
//!    with absent leaves (`≥ n`) dropped: `combine(x, absent) = x`.
//! 2. [`TreeFold`] takes leaves (or whole nodes) in increasing, gapless order starting
//!    anywhere, merges two siblings as soon as both are complete, and keeps the rest on a stack:
//!    after leaves `a..b` its stack is the canonical cover of `a..b` by maximal aligned nodes
//!    (at most 2·log₂(b − a) + 2 of them), which is what a rank sends to its peers.
//! 3. Pushing the nodes of every rank's stack, in rank order, into one fold and calling
//!    [`TreeFold::finish`] gives bitwise the value that pushing every leaf gives: siblings
//!    merge in the same pairs whichever way a node was formed, since a node only forms when
//!    all its leaves are in.
//!
//! # Costs
//! A push is O(1) amortised; `finish` is O(log n) combines.

/// A value the tree can combine; `combine(a, b)` has `a`'s leaves before `b`'s.
pub trait Combine: Sized {
    /// The value of a node whose left child is `self` and right child `right`.
    fn combine(&self, right: &Self) -> Self;
}

/// One node of the tree (rule 1) and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Node<T> {
    /// Height above the leaves.
    pub level: u32,
    /// Position among the nodes of its level.
    pub index: u64,
    /// The combined value of its leaves.
    pub value: T,
}

impl<T> Node<T> {
    /// One past the last leaf the node covers.
    fn end(&self) -> u64 {
        (self.index + 1) << self.level
    }
}

/// A running fold in tree order (rule 2).
#[derive(Debug, Clone)]
pub struct TreeFold<T> {
    stack: Vec<Node<T>>,
}

impl<T> Default for TreeFold<T> {
    fn default() -> Self {
        TreeFold { stack: Vec::new() }
    }
}

impl<T: Combine> TreeFold<T> {
    /// Adds leaf `index` (the next after the last one added, or any index first).
    pub fn push_leaf(&mut self, index: u64, value: T) {
        self.push(Node { level: 0, index, value });
    }

    /// Adds a whole node that begins where the last one ended (rule 3).
    ///
    /// # Panics
    /// If the node leaves a gap or overlaps: a bug in the caller's numbering.
    pub fn push(&mut self, node: Node<T>) {
        if let Some(top) = self.stack.last() {
            assert_eq!(top.end(), node.index << node.level, "tree nodes must be gapless");
        }
        self.stack.push(node);
        while let [.., left, right] = &self.stack[..] {
            if left.level != right.level || left.index % 2 != 0 {
                break;
            }
            let (level, index) = (left.level + 1, left.index / 2);
            let value = left.value.combine(&right.value);
            self.stack.truncate(self.stack.len() - 2);
            self.stack.push(Node { level, index, value });
        }
    }

    /// The maximal aligned nodes of the leaves added so far (rule 2), in leaf order.
    pub fn into_nodes(self) -> Vec<Node<T>> {
        self.stack
    }

    /// The value of the whole tree (rule 1); `None` when nothing was added.
    pub fn finish(self) -> Option<T> {
        let mut nodes = self.stack.into_iter().rev();
        let last = nodes.next()?.value;
        Some(nodes.fold(last, |right, left| left.value.combine(&right)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records the bracketing: equal strings mean the same combines in the same order.
    #[derive(Debug, Clone, PartialEq)]
    struct Expr(String);

    impl Combine for Expr {
        fn combine(&self, right: &Expr) -> Expr {
            Expr(format!("({} {})", self.0, right.0))
        }
    }

    /// The tree of rule 1, evaluated top-down by recursion: an independent second algorithm.
    fn canonical(lo: u64, hi: u64, n: u64) -> Option<Expr> {
        if lo >= n {
            return None;
        }
        if hi - lo == 1 {
            return Some(Expr(lo.to_string()));
        }
        let mid = lo + (hi - lo) / 2;
        match (canonical(lo, mid, n), canonical(mid, hi, n)) {
            (Some(a), Some(b)) => Some(a.combine(&b)),
            (a, None) => a,
            (None, b) => b,
        }
    }

    #[test]
    fn rank_stacks_combine_to_the_single_fold_and_the_canonical_tree() {
        for n in 0u64..70 {
            let mut single = TreeFold::default();
            (0..n).for_each(|i| single.push_leaf(i, Expr(i.to_string())));
            let single = single.finish();
            let size = n.next_power_of_two().max(1);
            assert_eq!(single, canonical(0, size, n), "n = {n}");
            for p in 1..=6u64 {
                let mut all = TreeFold::default();
                for r in 0..p {
                    let mut mine = TreeFold::default();
                    (n * r / p..n * (r + 1) / p)
                        .for_each(|i| mine.push_leaf(i, Expr(i.to_string())));
                    let nodes = mine.into_nodes();
                    let bound = 2 * (64 - (n.max(1)).leading_zeros()) as usize + 2;
                    assert!(nodes.len() <= bound, "rule 2: {} nodes", nodes.len());
                    nodes.into_iter().for_each(|node| all.push(node));
                }
                assert_eq!(all.finish(), single, "n = {n}, p = {p}");
            }
        }
    }
}
