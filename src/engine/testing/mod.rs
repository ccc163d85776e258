//! Fixtures shared by tests and `kubestep bench`: generated clusters and workloads.

pub mod cluster_dump;
pub mod workloads;
