//! kubestep's engine: the scheduling framework with kube-scheduler v1.35 semantics and
//! what drives it without a terminal or a cluster connection (sessions, replay, explain).
//!
//! This crate depends on no UI crate, no kube-rs and no async runtime (see its
//! Cargo.toml): the live link and the TUI are crates that depend on it, never the reverse.

pub mod api;
pub mod backend;
pub mod cluster;
pub mod config;
pub mod explain;
pub mod extender;
pub mod framework;
pub mod plugins;
pub mod recording;
pub mod redact;
pub mod session;
pub mod testing;
