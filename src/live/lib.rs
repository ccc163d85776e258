//! Live clusters: connecting as kubectl does, watching every kind the engine uses, and
//! what is built on the watch (the recorder, live mode). Library code: no UI here.

// The engine's modules, named at the root so paths read `crate::session::...` as they do
// inside the engine.
use kubestep_engine::{cluster, config, framework, recording, session};

pub mod access;
pub mod actuator;
pub mod connect;
pub mod error;
pub mod kinds;
pub mod link;
pub mod list;
pub mod mirror;
pub mod recorder;
pub mod server_url;
pub mod signals;
pub mod tap;
pub mod watch;

pub use connect::{ConnectOptions, Connection, connect};
pub use error::LiveError;
pub use watch::{Change, Update, WatchOptions, Watchers};
