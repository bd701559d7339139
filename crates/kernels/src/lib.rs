//! sluice-kernels
