//! The pod `explain` is about, as kubectl users name it: `NAME` (in `-n`, else the
//! context's namespace), `NAMESPACE/NAME`, `pod/NAME` (`pods/`, `po/`), a unique prefix
//! of the name, or a manifest file.

use std::path::Path;
use std::sync::Arc;

use anyhow::bail;
use k8s_openapi::api::core::v1::Pod;

use kubestep::cluster::{ClusterState, Object, manifest};
use kubestep::framework::PodInfo;

/// Where to look for a pod named without a namespace.
pub struct Scope<'a> {
    /// `-n NS`.
    pub namespace: Option<&'a str>,
    /// `-A`: any namespace.
    pub all: bool,
    /// The context's namespace (live), else `default`.
    pub default: &'a str,
}

/// The pod the argument names: from the file it names, else from the cluster.
pub fn resolve(arg: &str, scope: &Scope, cluster: &ClusterState) -> anyhow::Result<Arc<Pod>> {
    let path = Path::new(arg);
    if path.is_file() {
        return from_file(arg, path);
    }
    let (ns, name) = split(arg, scope.namespace)?;
    if scope.all && ns.is_none() {
        return anywhere(arg, name, cluster);
    }
    let explicit = ns.is_some() || scope.namespace.is_some();
    let ns = ns.or(scope.namespace).unwrap_or(scope.default);
    let key = format!("{ns}/{name}");
    // Explain re-runs the pod, so it needs the pod whole, containers included.
    if let Some(p) = cluster.full_pod(&key) {
        return Ok(p);
    }
    if arg.ends_with(".yaml") || arg.ends_with(".yml") || arg.ends_with(".json") {
        bail!("{arg}: no such file")
    }
    // A unique prefix of the name (a Deployment's pod without its suffixes).
    let starting: Vec<&Arc<PodInfo>> = cluster
        .pod_infos()
        .filter(|p| p.key.starts_with(&key))
        .collect();
    if let [one] = starting.as_slice() {
        return taken(arg, one, cluster, "");
    }
    if starting.len() > 1 {
        bail!("{}", several(arg, &starting, "pods' names start so"));
    }
    // The usual slip is the namespace: a pod of that name in another one. Without a
    // namespace given, the one pod of that name (or prefix) anywhere is taken.
    if !explicit {
        return anywhere(arg, name, cluster)
            .map_err(|e| anyhow::anyhow!("{e} (looked in namespace {ns}, then in all)"));
    }
    let mut elsewhere: Vec<&str> = cluster
        .pod_infos()
        .filter(|p| p.name == name)
        .map(|p| p.key.as_str())
        .collect();
    elsewhere.sort();
    elsewhere.truncate(5);
    if elsewhere.is_empty() {
        bail!("{arg}: pod {key} does not exist in the cluster")
    }
    bail!(
        "{arg}: pod {key} does not exist in the cluster (same name in: {}; -n NAMESPACE or NAMESPACE/NAME chooses)",
        elsewhere.join(", ")
    )
}

/// `-A NAME`: the one pod of that name (or, failing that, name prefix) in any namespace.
fn anywhere(arg: &str, name: &str, cluster: &ClusterState) -> anyhow::Result<Arc<Pod>> {
    let exact: Vec<&Arc<PodInfo>> = cluster.pod_infos().filter(|p| p.name == name).collect();
    match exact.as_slice() {
        [one] => return taken(arg, one, cluster, ""),
        [] => {}
        some => bail!(
            "{}",
            several(arg, some, "pods have this name in different namespaces")
        ),
    }
    let starting: Vec<&Arc<PodInfo>> = cluster
        .pod_infos()
        .filter(|p| p.name.starts_with(name))
        .collect();
    match starting.as_slice() {
        [one] => taken(arg, one, cluster, ""),
        [] => bail!("{arg}: no pod of this name in any namespace"),
        some => bail!("{}", several(arg, some, "pods' names start so")),
    }
}

/// `NAMESPACE/NAME`, `pod/NAME`, `NAME`: the namespace it gives, and the name.
pub fn split<'a>(
    arg: &'a str,
    namespace: Option<&str>,
) -> anyhow::Result<(Option<&'a str>, &'a str)> {
    let bad =
        || anyhow::anyhow!("{arg}: no such file, and not a pod (NAME, NAMESPACE/NAME or pod/NAME)");
    let parts: Vec<&str> = arg.split('/').collect();
    let (ns, name) = match parts.as_slice() {
        [name] => (None, *name),
        [kind, name] if is_pod_kind(kind) => (None, *name),
        [kind, _] if is_other_kind(kind) => {
            bail!("{arg}: explain takes pods (NAME, NAMESPACE/NAME or pod/NAME), not {kind}")
        }
        [ns, name] => (Some(*ns), *name),
        [ns, kind, name] if is_pod_kind(kind) => (Some(*ns), *name),
        _ => return Err(bad()),
    };
    if name.is_empty() || ns.is_some_and(str::is_empty) {
        return Err(bad());
    }
    if let (Some(given), Some(flag)) = (ns, namespace)
        && given != flag
    {
        bail!("{arg}: names namespace {given}, but -n says {flag}");
    }
    Ok((ns, name))
}

fn is_pod_kind(s: &str) -> bool {
    matches!(s.to_ascii_lowercase().as_str(), "pod" | "pods" | "po")
}

/// A kubectl resource name other than pods: `deploy/x` is not a namespace `deploy`.
fn is_other_kind(s: &str) -> bool {
    matches!(
        s.to_ascii_lowercase().as_str(),
        "deploy"
            | "deployment"
            | "deployments"
            | "sts"
            | "statefulset"
            | "statefulsets"
            | "rs"
            | "replicaset"
            | "replicasets"
            | "job"
            | "jobs"
            | "ds"
            | "daemonset"
            | "daemonsets"
            | "node"
            | "nodes"
            | "no"
    )
}

fn taken(
    arg: &str,
    one: &Arc<PodInfo>,
    cluster: &ClusterState,
    why: &str,
) -> anyhow::Result<Arc<Pod>> {
    if one.key != arg {
        tell!(
            "{}: {arg}: taken as {}{why}",
            crate::cli::invoked_name(),
            one.key
        );
    }
    match cluster.full_pod(&one.key) {
        Some(p) => Ok(p),
        None => bail!("{arg}: pod {} is not kept whole by the reader", one.key),
    }
}

/// Several pods match: name up to ten, with where each is.
fn several(arg: &str, pods: &[&Arc<PodInfo>], what: &str) -> String {
    let mut keys: Vec<String> = pods
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
    format!(
        "{arg}: {} {what}; give one: {}{tail}",
        pods.len(),
        keys.join(", ")
    )
}

fn from_file(arg: &str, path: &Path) -> anyhow::Result<Arc<Pod>> {
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
    Ok(Arc::new(pod))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_references_as_kubectl_users_write_them() {
        assert_eq!(split("web-0", None).unwrap(), (None, "web-0"));
        assert_eq!(split("pod/web-0", None).unwrap(), (None, "web-0"));
        assert_eq!(split("po/web-0", Some("shop")).unwrap(), (None, "web-0"));
        assert_eq!(split("shop/web-0", None).unwrap(), (Some("shop"), "web-0"));
        assert_eq!(
            split("shop/web-0", Some("shop")).unwrap(),
            (Some("shop"), "web-0")
        );
        assert_eq!(
            split("shop/pods/web-0", None).unwrap(),
            (Some("shop"), "web-0")
        );
        for bad in ["", "/x", "x/", "a/b/c", "shop//x"] {
            assert!(split(bad, None).is_err(), "{bad}");
        }
        let e = split("deploy/web", None).unwrap_err().to_string();
        assert!(e.contains("not deploy"), "{e}");
        let e = split("shop/web-0", Some("ml")).unwrap_err().to_string();
        assert!(e.contains("-n says ml"), "{e}");
    }
}
