//! Flags shared by the commands that talk to a live cluster (record, live).

use std::path::PathBuf;

use clap::Args;

use kubestep::live::ConnectOptions;

#[derive(Debug, Args)]
pub struct ClusterArgs {
    /// The kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else in-cluster).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: its current context).
    #[arg(long, value_name = "NAME", add = super::completion::contexts())]
    pub context: Option<String>,
    /// Namespaced objects from this namespace only. Nodes and other cluster-scoped
    /// objects are always watched; pods of other namespaces are then invisible, so their
    /// use of node resources is not counted.
    #[arg(
        short = 'n',
        long,
        value_name = "NS",
        conflicts_with = "all_namespaces",
        add = super::completion::namespaces()
    )]
    pub namespace: Option<String>,
    /// Every namespace (the default).
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
}

impl ClusterArgs {
    pub fn connect_options(&self) -> ConnectOptions {
        ConnectOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
        }
    }

    pub fn namespace(&self) -> anyhow::Result<Option<String>> {
        match &self.namespace {
            Some(n) if n.is_empty() => anyhow::bail!("--namespace: empty namespace name"),
            n => Ok(n.clone()),
        }
    }
}
