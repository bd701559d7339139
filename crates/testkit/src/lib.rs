//! sluice-testkit
