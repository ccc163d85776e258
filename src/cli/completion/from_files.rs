//! Names from `--cluster`: dumps, or one recording (a file or a bundled name) as it is at
//! its last event, read as `explain` reads them. Nothing here touches the network.

use std::collections::BTreeMap;
use std::path::Path;

use kubestep::cluster::ClusterState;
use kubestep::recording;

use super::lookup::{Namespace, Pod, PodState};

/// The cluster the sources describe, or `None` when it cannot be read (any error: a
/// completion says nothing). Standard input (`-`) is not read: the shell owns it.
pub fn load(sources: &[String]) -> Option<ClusterState> {
    if sources.is_empty() || sources.iter().any(|s| s == "-") {
        return None;
    }
    let manifest = |s: &String| {
        let p = Path::new(s);
        p.is_file() && !recording::reader::is_recording_file(p)
    };
    if sources.iter().all(manifest) {
        let paths: Vec<&Path> = sources.iter().map(Path::new).collect();
        return ClusterState::load(&paths).ok();
    }
    let [one] = sources else {
        return None;
    };
    let rec = recording::open(one).ok()?;
    Some(rec.cluster_at(rec.end()))
}

pub fn pods(cluster: &ClusterState) -> Vec<Pod> {
    cluster
        .pod_infos()
        .map(|p| Pod {
            namespace: p.namespace.clone(),
            name: p.name.clone(),
            state: match p.node_name() {
                "" => PodState::Pending,
                node => PodState::OnNode(node.to_string()),
            },
        })
        .collect()
}

/// The namespaces the cluster has objects of (a dump need not hold the Namespace
/// objects), with how many pods each holds and how many of them are pending.
pub fn namespaces(cluster: &ClusterState) -> Vec<Namespace> {
    let mut counts: BTreeMap<&str, (usize, usize)> = cluster
        .listers
        .namespaces
        .keys()
        .map(|n| (n.as_str(), (0, 0)))
        .collect();
    for p in cluster.pod_infos() {
        let c = counts.entry(p.namespace.as_str()).or_default();
        c.0 += 1;
        if p.node_name().is_empty() {
            c.1 += 1;
        }
    }
    counts
        .into_iter()
        .map(|(name, (pods, pending))| Namespace {
            name: name.to_string(),
            pods: Some((pods, pending)),
        })
        .collect()
}
