//! sluice-graph
