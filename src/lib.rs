//! kubestep: a step-through debugger for the Kubernetes scheduling framework.
//!
//! The engine (api, config, framework, plugins, cluster, explain, session) depends on no
//! UI crate; `tui` drives it through the Session API.

pub mod api;
pub mod cluster;
pub mod config;
pub mod explain;
pub mod extender;
pub mod framework;
pub mod live;
pub mod plugins;
pub mod recording;
pub mod session;
pub mod signals;
pub mod testing;
pub mod tui;
