//! kubestep's engine: the plugins over the scheduling framework (crate
//! `kubestep-framework`, kube-scheduler v1.35 semantics) and what drives it without a
//! terminal or a cluster connection (queue, cluster, recordings, sessions, explain).
//!
//! This crate depends on no UI crate, no kube-rs and no async runtime (see its
//! Cargo.toml): the live link and the TUI are crates that depend on it, never the reverse.

pub mod backend;
pub mod cluster;
pub mod explain;
pub mod extender;
pub mod output_file;
pub mod plugins;
pub mod recording;
pub mod redact;
pub mod session;
pub mod testing;

// The framework crate's modules keep the paths they had when they lived here.
pub use kubestep_framework as framework;
pub use kubestep_framework::{api, config, features, limits};
