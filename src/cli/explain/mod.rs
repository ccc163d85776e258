//! `kubestep explain`: one scheduling cycle for one pod, explained; or every pending
//! pod's verdict. On the current kubeconfig context's cluster (read once, `from_cluster`)
//! or on a dump or recording (`--cluster`).

mod from_cluster;
mod pending;
mod pod_ref;

use std::path::{Path, PathBuf};

use kubestep::recording;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{ArgGroup, Args, ValueEnum};

use kubestep::cluster::ClusterState;
use kubestep::config;
use kubestep::explain::{self, text};
use kubestep::features::Choice;

/// `-o`: kubectl's output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// The explanation (or a line per pending pod).
    Text,
    /// Text with more: every node a row; the pending list with priority, feasible nodes,
    /// nomination and victims.
    Wide,
    Json,
    Yaml,
    /// `pod/NAME`, a line per pod (as kubectl's `-o name`).
    Name,
}

/// `--nodes`: how the text output's node table shows the nodes.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Nodes {
    /// Every node when there are at most 40 rows, grouped by plugin and reason above that.
    Auto,
    /// Every node, one row each, however many (and how close the rejected nodes came).
    All,
    /// Grouped by plugin and reason with counts and example names, however few.
    Summary,
}

impl From<Nodes> for text::NodeRows {
    fn from(n: Nodes) -> Self {
        match n {
            Nodes::Auto => text::NodeRows::Auto,
            Nodes::All => text::NodeRows::All,
            Nodes::Summary => text::NodeRows::Summary,
        }
    }
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("what").required(true).args(["target", "pod", "pending"])))]
#[command(after_long_help = "\
Examples:
  # Why is this pod Pending? (the current kubeconfig context, read once, nothing written)
  kubestep explain -n ml trainer-llm-0
  kubectl kubestep explain -n ml trainer-llm-0

  # Every pending pod of a namespace, or of the cluster; exit code 1 if any cannot be placed
  kubestep explain --pending -n shop
  kubestep explain --pending -A -o wide

  # Another context; JSON for scripts
  kubestep explain --context prod shop/checkout-0 -o json

  # A pod of the bundled example cluster (no cluster needed)
  kubestep explain --cluster example-cluster ml/trainer-llm-0

  # A dump of your cluster (kubectl's output piped in), and a pod manifest not yet applied
  kubectl get nodes,pods,namespaces,pv,pvc,storageclasses,csinodes,csidrivers,csistoragecapacities,pdb,priorityclasses,services,replicasets,statefulsets,replicationcontrollers -A -o yaml > cluster.yaml
  kubestep explain --cluster cluster.yaml new-pod.yaml -o yaml

  # With dynamic resource allocation objects (Kubernetes 1.34+)
  kubectl get deviceclasses,resourceslices,resourceclaims,resourceclaimtemplates -A -o yaml > dra.yaml
  kubestep explain --cluster cluster.yaml --cluster dra.yaml --pending -A

  # With your scheduler's configuration; every node a row however many
  kubestep explain --config scheduler-config.yaml shop/checkout-0 --nodes all

Exit code: 0 the pod fits (--pending: every pod fits), 1 it does not or is gated (--pending:
any pod), 2 bad input or the cluster could not be read.")]
pub struct ExplainArgs {
    /// The pod: NAME (in -n's namespace, else the context's), NAMESPACE/NAME or pod/NAME;
    /// a unique prefix of the name will do (`jupyter` for `jupyter-7d9f…`). Or a pod
    /// manifest file, explained against the cluster as if submitted.
    #[arg(value_name = "POD", add = super::completion::pods())]
    target: Option<String>,
    /// The pod, as POD (kept for scripts written before POD could be given plainly).
    #[arg(long, value_name = "FILE|NAMESPACE/NAME", conflicts_with = "target")]
    pod: Option<String>,
    /// Instead of one pod: every pending pod (of -n's namespace, -A every namespace), a
    /// line each with its verdict: the node it would go to, or the exact unschedulable
    /// message and where preemption would make room; each decided alone on the cluster
    /// as it is.
    #[arg(long, conflicts_with_all = ["pod", "target"])]
    pending: bool,
    /// The namespace of POD and of --pending's pods (default: the context's namespace;
    /// on --cluster, every namespace for --pending and `default` for POD).
    #[arg(
        short = 'n',
        long,
        value_name = "NAMESPACE",
        conflicts_with = "all_namespaces",
        add = super::completion::namespaces()
    )]
    namespace: Option<String>,
    /// Every namespace: --pending lists them all, POD is found in whichever holds it.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    /// Read a dump or a recording instead of the cluster: YAML (multi-document), JSON or a
    /// kubectl List, gzip or not, of any size (read as a stream); `-` reads standard
    /// input. Repeatable. Or one recording (a file, or a bundled recording's name): the
    /// cluster as it is at the recording's last event.
    #[arg(
        long,
        value_name = "FILE|RECORDING",
        value_parser = super::completion::RecordingSource,
        hide_possible_values = true
    )]
    cluster: Vec<String>,
    /// The kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else in-cluster).
    #[arg(long, value_name = "FILE", conflicts_with = "cluster")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: its current context).
    #[arg(long, value_name = "NAME", conflicts_with = "cluster", add = super::completion::contexts())]
    context: Option<String>,
    /// KubeSchedulerConfiguration (v1 or v1beta3). Default: the one the input holds (a
    /// recording's header; on a cluster, the one KubeSchedulerConfiguration among
    /// kube-system's ConfigMaps), else the version's defaults.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    kube: super::kube::KubeArgs,
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Text)]
    output: Output,
    /// Text output's node table: every node, or nodes grouped by plugin and reason with
    /// counts and a few example names (the default groups above 40 rows; grouped, it ends
    /// with how close the rejected nodes came). JSON and YAML always list every node;
    /// `-o wide` shows every node unless this says otherwise.
    #[arg(long, value_enum, value_name = "WHICH")]
    nodes: Option<Nodes>,
    /// Call the extenders the input's scheduler configuration names (a recording's
    /// header, the cluster's ConfigMap); without it they are listed, not called:
    /// explaining never makes kubestep call anything but the API server it reads.
    #[arg(long)]
    call_extenders: bool,
}

/// Where the cluster came from.
enum Input {
    /// The kubeconfig context's cluster, read now.
    Cluster(Box<from_cluster::Read>),
    /// Dumps, or one recording with its header.
    Files(Option<Box<recording::Recording>>),
}

pub fn run(a: ExplainArgs) -> anyhow::Result<ExitCode> {
    if a.namespace.as_deref() == Some("") {
        bail!("--namespace: empty namespace name");
    }
    let (cluster, input, reported) = if a.cluster.is_empty() {
        let opts = kubestep::live::ConnectOptions {
            kubeconfig: a.kubeconfig.clone(),
            context: a.context.clone(),
        };
        let mut read = from_cluster::read(&opts)?;
        let cluster = std::mem::take(&mut read.cluster);
        let version = read.version.clone();
        (cluster, Input::Cluster(Box::new(read)), version)
    } else {
        let (cluster, recording) = load_cluster(&a.cluster)?;
        // The version: the user's, else the recording's header, else the nodes' kubelets.
        let (rec, version) = match recording {
            Some((rec, v)) => (Some(Box::new(rec)), v),
            None => (None, cluster.kubelet_version()),
        };
        (cluster, Input::Files(rec), version)
    };
    let input_name = match &input {
        Input::Cluster(r) => format!("the cluster at {}", r.source),
        Input::Files(_) => a.cluster.join(", "),
    };
    if cluster.nodes().is_empty() {
        bail!(
            "no nodes in {input_name}: the scheduler has nowhere to place a pod (a dump needs its nodes: kubectl get nodes,pods -A -o json)"
        );
    }
    let features = a.kube.resolve(&super::user_defaults(true), reported)?;
    let found_cfg = match &input {
        _ if a.config.is_some() => None,
        Input::Files(Some(rec)) => {
            if let Some(w) = rec.withheld_extenders(a.call_extenders) {
                tell!("{}: warning: {w}", super::invoked_name());
            }
            rec.scheduler_config(&input_name, &features, a.call_extenders)?
        }
        Input::Files(None) => None,
        Input::Cluster(read) => read.scheduler_config(&features, a.call_extenders)?,
    };
    let cfg = match (&a.config, found_cfg) {
        (Some(p), _) => config::load_file_for(p, &features)?,
        (None, Some(c)) => c,
        (None, None) => config::default_configuration_for(&features),
    };
    let default_ns = match &input {
        Input::Cluster(r) => r.namespace.clone(),
        Input::Files(_) => "default".to_string(),
    };
    let Some(pod_arg) = a.target.as_deref().or(a.pod.as_deref()) else {
        // kubectl's habit on a cluster: the context's namespace unless -n or -A; a dump
        // has no context, so every namespace.
        let only = match (&a.namespace, &input) {
            _ if a.all_namespaces => None,
            (Some(ns), _) => Some(ns.clone()),
            (None, Input::Cluster(r)) => Some(r.namespace.clone()),
            (None, Input::Files(_)) => None,
        };
        return pending::run(&cluster, &cfg, a.output, only.as_deref());
    };
    let scope = pod_ref::Scope {
        namespace: a.namespace.as_deref(),
        all: a.all_namespaces,
        default: &default_ns,
    };
    let pod = pod_ref::resolve(pod_arg, &scope, &cluster)?;
    if let Some(w) = missing_priority_class(&pod, &cluster) {
        tell!("{}: warning: {w}", super::invoked_name());
    }
    // One explainer for the pod and the changed copies the what-if hints re-run.
    let explainer = explain::Explainer::new(&cluster, &cfg, &pod)?;
    let mut e = explainer.explain(pod.clone())?;
    if a.output != Output::Name {
        e.what_if = explain::hints::what_if_with(&explainer, &cluster, &cfg, &pod, &e);
    }
    // Its snapshot goes with the process, as the cluster does (exit_without_freeing).
    std::mem::forget(explainer);
    let rows = match (a.nodes, a.output) {
        (Some(n), _) => n.into(),
        (None, Output::Wide) => text::NodeRows::All,
        (None, _) => text::NodeRows::Auto,
    };
    match a.output {
        Output::Json => say!(
            "{}",
            serde_json::to_string_pretty(&e).context("encoding the explanation")?
        )?,
        Output::Yaml => say_raw!("{}", super::replay::to_yaml(&e)?)?,
        Output::Text | Output::Wide => say_raw!("{}", text::render_with(&e, rows))?,
        Output::Name => say!("pod/{}", pod.metadata.name.as_deref().unwrap_or(""))?,
    }
    let code = if e.fits() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    super::exit_without_freeing(cluster);
    Ok(code)
}

/// A recording given as `--cluster`: its header (events dropped), and the version it
/// reports.
type RecordingSource = (recording::Recording, Option<Choice>);

/// Manifests are merged (duplicates are errors); a recording stands alone and brings its
/// header (the version it was recorded from, its scheduler configuration).
fn load_cluster(sources: &[String]) -> anyhow::Result<(ClusterState, Option<RecordingSource>)> {
    // `-` is standard input: a manifest or dump (kubectl's output piped in).
    let manifest = |s: &String| {
        let p = Path::new(s);
        s == "-" || (p.is_file() && !recording::reader::is_recording_file(p))
    };
    if sources.iter().all(manifest) {
        let paths: Vec<&Path> = sources.iter().map(Path::new).collect();
        return Ok((ClusterState::load(&paths)?, None));
    }
    let [source] = sources else {
        bail!(
            "a recording must be the only --cluster (got {})",
            sources.join(", ")
        );
    };
    let mut rec = recording::open(source)?;
    super::say_what_reading_found(&rec);
    let cluster = rec.cluster_at(rec.end());
    let version = rec.kube_version();
    // Only the header is read after this; the events are in the cluster now.
    rec.events = Vec::new();
    Ok((cluster, Some((rec, version))))
}

/// A pod naming a PriorityClass the cluster objects lack: the API server would refuse it
/// (unless it has the class), and kubestep can only take its priority as 0.
fn missing_priority_class(
    pod: &k8s_openapi::api::core::v1::Pod,
    cluster: &ClusterState,
) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    let class = spec.priority_class_name.as_deref()?;
    if spec.priority.is_some() || cluster.listers.priority_classes.contains_key(class) {
        return None;
    }
    Some(format!(
        "pod {}: spec.priorityClassName: no PriorityClass {class:?} among the cluster objects (the API server refuses a pod whose class does not exist); its priority is taken as 0: add the class (kubectl get priorityclasses -o yaml) to --cluster",
        pod_key(pod)
    ))
}

fn pod_key(p: &k8s_openapi::api::core::v1::Pod) -> String {
    format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or("default"),
        p.metadata.name.as_deref().unwrap_or("")
    )
}
