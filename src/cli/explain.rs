//! `kubestep explain`: one scheduling cycle for one pod, explained.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kubestep::recording;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};

use kubestep::cluster::{ClusterState, Object, manifest};
use kubestep::config;
use kubestep::explain::{self, text};
use kubestep::features::Choice;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Output {
    Text,
    Json,
    Yaml,
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
#[command(after_long_help = "\
Examples:
  # A pod of the bundled example cluster
  kubestep explain --cluster example-cluster --pod ml/trainer-llm-0

  # Why is a pod of your cluster Pending? (kubectl's output piped in)
  kubectl get nodes,pods -A -o json | kubestep explain --cluster - --pod shop/checkout-0

  # Your cluster as kubectl prints it, and a pod manifest not yet applied
  kubectl get nodes,pods,namespaces,pv,pvc,storageclasses,csinodes,csidrivers,csistoragecapacities,pdb,priorityclasses,services,replicasets,statefulsets,replicationcontrollers -A -o yaml > cluster.yaml
  kubestep explain --cluster cluster.yaml --pod new-pod.yaml -o yaml

  # With dynamic resource allocation objects (Kubernetes 1.34+)
  kubectl get deviceclasses,resourceslices,resourceclaims,resourceclaimtemplates -A -o yaml > dra.yaml
  kubestep explain --cluster cluster.yaml --cluster dra.yaml --pending

  # With your scheduler's configuration
  kubestep explain --cluster cluster.yaml --config scheduler-config.yaml --pod shop/checkout-0 -o json

  # Every node of a large cluster, one row each (grouped above 40 rows by default)
  kubestep explain --cluster cluster.yaml --pod shop/checkout-0 --nodes all

  # Every pending pod, a line each: where it would go, or why it cannot
  kubestep explain --cluster cluster.yaml --pending

Exit code: 0 the pod fits, 1 it does not (or is gated), 2 bad input.")]
pub struct ExplainArgs {
    /// Cluster objects: YAML (multi-document), JSON, or a kubectl List, gzip or not, of
    /// any size (read as a stream); `-` reads standard input. Repeatable. Or one recording
    /// (a file, or a bundled recording's name): the cluster as it is at the recording's
    /// last event.
    #[arg(
        long,
        required = true,
        value_name = "FILE|RECORDING",
        value_parser = super::completion::RecordingSource,
        hide_possible_values = true
    )]
    cluster: Vec<String>,
    /// KubeSchedulerConfiguration (v1 or v1beta3); the version's defaults without it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    kube: super::kube::KubeArgs,
    /// The pod: a manifest file, or NAMESPACE/NAME of a pod in the cluster (a unique
    /// prefix of the name will do: `ml/jupyter` for `ml/jupyter-7d9f…`).
    #[arg(
        long,
        value_name = "FILE|NAMESPACE/NAME",
        required_unless_present = "pending"
    )]
    pod: Option<String>,
    /// Instead of one pod: every pending pod of the cluster, a line each with its verdict
    /// (the node it would go to, or the exact unschedulable message), each decided alone
    /// on the cluster as it is.
    #[arg(long, conflicts_with = "pod")]
    pending: bool,
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Text)]
    output: Output,
    /// Text output's node table: every node, or nodes grouped by plugin and reason with
    /// counts and a few example names (the default groups above 40 rows; grouped, it ends
    /// with how close the rejected nodes came). JSON and YAML always list every node.
    #[arg(long, value_enum, default_value_t = Nodes::Auto, value_name = "WHICH")]
    nodes: Nodes,
    /// Call the extenders a recording's header names (without it they are listed, not
    /// called: opening a file never makes kubestep call the network).
    #[arg(long)]
    call_extenders: bool,
}

pub fn run(a: ExplainArgs) -> anyhow::Result<ExitCode> {
    let (cluster, recording) = load_cluster(&a.cluster)?;
    // The version: the user's, else the recording's header, else the nodes' kubelets.
    let reported = match &recording {
        Some((_, v)) => v.clone(),
        None => cluster.kubelet_version(),
    };
    let recording = recording.map(|(rec, _)| rec);
    let features = a.kube.resolve(&super::user_defaults(true), reported)?;
    let recorded_cfg = match &recording {
        Some(rec) => {
            if a.config.is_none()
                && let Some(w) = rec.withheld_extenders(a.call_extenders)
            {
                tell!("{}: warning: {w}", super::invoked_name());
            }
            rec.scheduler_config(&a.cluster.join(", "), &features, a.call_extenders)?
        }
        None => None,
    };
    let cfg = match (&a.config, recorded_cfg) {
        (Some(p), _) => config::load_file_for(p, &features)?,
        (None, Some(c)) => c,
        (None, None) => config::default_configuration_for(&features),
    };
    let Some(pod_arg) = a.pod.as_deref() else {
        return pending(&cluster, &cfg, a.output);
    };
    let pod = resolve_pod(pod_arg, &cluster)?;
    if let Some(w) = missing_priority_class(&pod, &cluster) {
        tell!("{}: warning: {w}", super::invoked_name());
    }
    // One explainer for the pod and the changed copies the what-if hints re-run.
    let explainer = explain::Explainer::new(&cluster, &cfg, &pod)?;
    let mut e = explainer.explain(pod.clone())?;
    e.what_if = explain::hints::what_if_with(&explainer, &cluster, &cfg, &pod, &e);
    // Its snapshot goes with the process, as the cluster does (exit_without_freeing).
    std::mem::forget(explainer);
    match a.output {
        Output::Json => say!(
            "{}",
            serde_json::to_string_pretty(&e).context("encoding the explanation")?
        )?,
        Output::Yaml => say_raw!("{}", super::replay::to_yaml(&e)?)?,
        Output::Text => say_raw!("{}", text::render_with(&e, a.nodes.into()))?,
    }
    let code = if e.fits() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    super::exit_without_freeing(cluster);
    Ok(code)
}

/// `--pending`: a line per pending pod (text), or the list (JSON, YAML). Exit code 0: a
/// listing is not a verdict.
fn pending(
    cluster: &ClusterState,
    cfg: &config::KubeSchedulerConfiguration,
    output: Output,
) -> anyhow::Result<ExitCode> {
    let verdicts = explain::pending(cluster, cfg)?;
    match output {
        Output::Json => say!(
            "{}",
            serde_json::to_string_pretty(&verdicts).context("encoding the verdicts")?
        )?,
        Output::Yaml => say_raw!("{}", super::replay::to_yaml(&verdicts)?)?,
        Output::Text => say_raw!("{}", pending_text(&verdicts))?,
    }
    Ok(ExitCode::SUCCESS)
}

fn pending_text(verdicts: &[explain::PendingVerdict]) -> String {
    use std::fmt::Write as _;
    let w = verdicts
        .iter()
        .map(|v| v.pod.len())
        .max()
        .unwrap_or(3)
        .max(3);
    let mut out = format!("{:w$}  {:13}  NODE / WHY\n", "POD", "VERDICT");
    let mut counts = BTreeMap::<&str, usize>::new();
    for v in verdicts {
        *counts.entry(v.verdict).or_default() += 1;
        let why = match (&v.node, &v.message) {
            (Some(n), _) => format!("{n} (best of {} feasible)", v.feasible_nodes),
            (None, Some(m)) => m.clone(),
            (None, None) => String::new(),
        };
        let _ = writeln!(out, "{:w$}  {:13}  {why}", v.pod, v.verdict);
    }
    let counts: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let _ = writeln!(
        out,
        "\n{} pending pod(s){}{}; `--pod NAMESPACE/NAME` explains one",
        verdicts.len(),
        if counts.is_empty() { "" } else { ": " },
        counts.join(", ")
    );
    out
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

fn resolve_pod(
    arg: &str,
    cluster: &ClusterState,
) -> anyhow::Result<Arc<k8s_openapi::api::core::v1::Pod>> {
    let path = Path::new(arg);
    if path.is_file() {
        let (objs, _) = manifest::load_file(path)?;
        let mut pods = objs.into_iter().filter_map(|mut o| {
            o.value.normalize();
            match o.value {
                Object::Pod(p) => Some(*p),
                Object::PackedPod(pi) => Some(Arc::unwrap_or_clone(pi.full_pod())),
                _ => None,
            }
        });
        let Some(pod) = pods.next() else {
            bail!("{arg}: no Pod in this file")
        };
        if pods.next().is_some() {
            bail!("{arg}: more than one Pod in this file; give exactly one");
        }
        return Ok(Arc::new(pod));
    }
    if arg.matches('/').count() > 1 || arg.starts_with('/') || arg.ends_with('/') {
        bail!("--pod {arg}: no such file, and not a pod reference (NAMESPACE/NAME or NAME)");
    }
    let key = if arg.contains('/') {
        arg.to_string()
    } else {
        format!("default/{arg}")
    };
    // Explain re-runs the pod, so it needs the pod whole, containers included.
    match cluster.full_pod(&key) {
        Some(p) => Ok(p),
        None if arg.ends_with(".yaml") || arg.ends_with(".yml") || arg.ends_with(".json") => {
            bail!("{arg}: no such file")
        }
        None => {
            // A unique prefix of the name (a Deployment's pod without its suffixes).
            let starting: Vec<&Arc<kubestep::framework::PodInfo>> = cluster
                .pod_infos()
                .filter(|p| p.key.starts_with(&key))
                .collect();
            if let [one] = starting.as_slice() {
                tell!(
                    "{}: --pod {arg}: taken as {}",
                    super::invoked_name(),
                    one.key
                );
                if let Some(p) = cluster.full_pod(&one.key) {
                    return Ok(p);
                }
            }
            if starting.len() > 1 {
                let mut keys: Vec<String> = starting
                    .iter()
                    .map(|p| {
                        let state = if p.node_name().is_empty() {
                            "pending".to_string()
                        } else {
                            format!("on {}", p.node_name())
                        };
                        format!("{} ({state})", p.key)
                    })
                    .collect();
                keys.sort();
                let more = keys.len().saturating_sub(10);
                keys.truncate(10);
                let tail = if more > 0 {
                    format!(", and {more} more")
                } else {
                    String::new()
                };
                bail!(
                    "--pod {arg}: {} pods' names start so; give one: {}{tail}",
                    starting.len(),
                    keys.join(", ")
                );
            }
            // The usual slip is the namespace: name the pods of that name elsewhere.
            let name = key.split_once('/').map_or(key.as_str(), |(_, n)| n);
            let elsewhere: Vec<&str> = cluster
                .pod_infos()
                .filter(|p| p.name == name)
                .map(|p| p.key.as_str())
                .take(5)
                .collect();
            if elsewhere.is_empty() {
                bail!("--pod {arg}: pod {key} does not exist in the cluster")
            }
            bail!(
                "--pod {arg}: pod {key} does not exist in the cluster (same name in: {})",
                elsewhere.join(", ")
            )
        }
    }
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
