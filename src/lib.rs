//! kubestep: a step-through debugger for the Kubernetes scheduling framework.
//!
//! A workspace of three library crates, re-exported here under the paths the binary and
//! the tests use (`kubestep::session`, `kubestep::live`, `kubestep::tui`):
//! - `kubestep-engine` (src/engine): api, config, framework, plugins, cluster, recording,
//!   session, explain, extender. No UI crate, no kube-rs, no tokio.
//! - `kubestep-live` (src/live): the API server link (kube-rs, tokio) and signals.
//! - `kubestep-tui` (src/tui): the terminal UI (ratatui).

pub use kubestep_engine::{
    api, cluster, config, explain, extender, features, framework, limits, output_file, plugins,
    recording, redact, session, testing,
};
pub use kubestep_live as live;
pub use kubestep_live::signals;
pub use kubestep_tui as tui;
