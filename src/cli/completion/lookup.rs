//! Where completion's names come from: `--cluster` when the line gives it (files only,
//! never the network), else the kubeconfig's context, as the command would read them.
//! Every lookup is bounded in time and silent: an error, or a cluster slower than
//! [`DEADLINE`], offers nothing.

use std::sync::mpsc;
use std::time::Duration;

use kubestep::live::ConnectOptions;

use super::line::Given;
use super::{from_files, from_kubeconfig};

/// How long a completion waits for names. A person pressing TAB waits no longer.
pub const DEADLINE: Duration = Duration::from_secs(3);

/// Which namespace's pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The context's namespace (on a cluster); every namespace of a file.
    Default,
    Namespace(String),
    All,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodState {
    /// Not on a node yet: what `explain` is for.
    Pending,
    OnNode(String),
    /// Listed without its status (metadata only).
    Unknown,
}

#[derive(Debug, Clone)]
pub struct Pod {
    pub namespace: String,
    pub name: String,
    pub state: PodState,
}

#[derive(Debug, Clone)]
pub struct Namespace {
    pub name: String,
    /// Pods in it and how many of them are pending, when known.
    pub pods: Option<(usize, usize)>,
}

/// Pods the line's command would see in `scope`, and whether they are all of one
/// namespace the command takes a bare name in (`-n`, or the context's).
pub fn pods(g: &Given, scope: Scope) -> Option<(Vec<Pod>, bool)> {
    if !g.clusters.is_empty() {
        let clusters = g.clusters.clone();
        let mut pods = within(move || from_files::load(&clusters).map(|c| from_files::pods(&c)))?;
        if let Scope::Namespace(ns) = &scope {
            pods.retain(|p| &p.namespace == ns);
        }
        return Some((pods, matches!(scope, Scope::Namespace(_))));
    }
    let opts = connect_options(g);
    let one = scope != Scope::All;
    let pods = within(move || from_kubeconfig::pods(&opts, &scope))?;
    Some((pods, one))
}

pub fn namespaces(g: &Given) -> Option<Vec<Namespace>> {
    if !g.clusters.is_empty() {
        let clusters = g.clusters.clone();
        return within(move || from_files::load(&clusters).map(|c| from_files::namespaces(&c)));
    }
    let opts = connect_options(g);
    within(move || from_kubeconfig::namespaces(&opts))
}

pub fn contexts(g: &Given) -> Option<Vec<from_kubeconfig::Context>> {
    let opts = ConnectOptions {
        kubeconfig: g.kubeconfig.clone(),
        context: None,
    };
    within(move || from_kubeconfig::contexts(&opts))
}

/// The kubeconfig and context the line's command would use: `live` and `record` take
/// config.toml's `context` when the line gives none.
fn connect_options(g: &Given) -> ConnectOptions {
    let context = g.context.clone().or_else(|| {
        matches!(g.subcommand.as_deref(), Some("live" | "record"))
            .then(|| kubestep::tui::config::load_user(&mut Vec::new()).context)
            .flatten()
    });
    ConnectOptions {
        kubeconfig: g.kubeconfig.clone(),
        context,
    }
}

/// `f`'s answer if it comes within [`DEADLINE`]. It runs on a thread of its own, so a
/// server that never answers (or a credential plugin that hangs) costs the deadline and
/// no more: the process exits after printing, whatever the thread is doing.
pub fn within<T: Send + 'static>(f: impl FnOnce() -> Option<T> + Send + 'static) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("completion lookup".into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .ok()?;
    rx.recv_timeout(DEADLINE).ok().flatten()
}
