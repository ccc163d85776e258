//! Fixtures shared by tests and `kubestep bench`: generated clusters and workloads.

pub mod workloads;
