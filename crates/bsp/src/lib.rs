//! sluice-bsp
