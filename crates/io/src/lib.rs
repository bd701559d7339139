//! sluice-io
