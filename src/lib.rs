//! kubestep: a step-through debugger for the Kubernetes scheduling framework.
//!
//! The engine (api, config, framework, plugins, cluster, explain) depends on no UI crate.
pub mod config;
