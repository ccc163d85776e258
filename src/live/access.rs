//! What kubestep may do on a cluster: the writes active mode makes, checked before it
//! starts (a SelfSubjectAccessReview each, as `kubectl auth can-i` asks), and the RBAC
//! role that grants everything a mode needs, printed when something is denied.

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::Api;
use kube::api::PostParams;

use super::connect::Connection;
use super::error::{Doing, LiveError, classify};
use super::kinds::{Kind, all_kinds};

/// What the role is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `kubestep live` without `--active`: read only.
    Shadow,
    /// `kubestep record`: read only.
    Record,
    /// `kubestep live --active`: read, and write as a scheduler.
    Active,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Shadow => "shadow",
            Mode::Record => "record",
            Mode::Active => "active",
        }
    }
}

/// One write active mode makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Write {
    pub verb: &'static str,
    pub group: &'static str,
    pub resource: &'static str,
    pub subresource: &'static str,
    /// Why kubestep makes it.
    pub purpose: &'static str,
}

/// The writes of active mode, as kube-scheduler makes them.
pub const WRITES: &[Write] = &[
    Write {
        verb: "create",
        group: "",
        resource: "pods",
        subresource: "binding",
        purpose: "to bind pods",
    },
    Write {
        verb: "create",
        group: "events.k8s.io",
        resource: "events",
        subresource: "",
        purpose: "for Scheduled, FailedScheduling and Preempted events",
    },
    Write {
        verb: "patch",
        group: "",
        resource: "pods",
        subresource: "status",
        purpose: "for the PodScheduled condition and nominatedNodeName",
    },
    Write {
        verb: "delete",
        group: "",
        resource: "pods",
        subresource: "",
        purpose: "to delete preemption victims",
    },
    Write {
        verb: "patch",
        group: "resource.k8s.io",
        resource: "resourceclaims",
        subresource: "",
        purpose: "for the finalizer on a ResourceClaim DynamicResources allocates",
    },
    Write {
        verb: "create",
        group: "resource.k8s.io",
        resource: "resourceclaims",
        subresource: "",
        purpose: "for the claim serving a pod's extended resources (DRAExtendedResource)",
    },
    Write {
        verb: "delete",
        group: "resource.k8s.io",
        resource: "resourceclaims",
        subresource: "",
        purpose: "to delete that claim again when its pod's binding fails",
    },
    Write {
        verb: "patch",
        group: "resource.k8s.io",
        resource: "resourceclaims",
        subresource: "status",
        purpose: "for a ResourceClaim's allocation and reservedFor (DynamicResources' PreBind)",
    },
];

impl Write {
    fn plural(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }
}

/// Asks the API server, for every write of active mode, whether kubestep may make it (in
/// `namespace`, or in all namespaces). Returns the denied ones as `Forbidden` errors; an
/// error when the server cannot answer the question at all.
pub async fn check_writes(
    conn: &Connection,
    namespace: Option<&str>,
) -> Result<Vec<LiveError>, LiveError> {
    let api: Api<SelfSubjectAccessReview> = Api::all(conn.client.clone());
    let mut denied = Vec::new();
    for w in WRITES {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    namespace: namespace.map(str::to_string),
                    verb: Some(w.verb.into()),
                    group: Some(w.group.into()),
                    resource: Some(w.resource.into()),
                    subresource: (!w.subresource.is_empty()).then(|| w.subresource.into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let answer = api
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| {
                classify(
                    &e,
                    Doing {
                        verb: "create",
                        kind: None,
                        namespace: None,
                        server: conn.server(),
                    },
                )
            })?;
        let status = answer.status.unwrap_or_default();
        if !status.allowed {
            let gv = if w.group.is_empty() {
                "core/v1".to_string()
            } else {
                format!("{}/v1", w.group)
            };
            let reason = status.reason.filter(|r| !r.is_empty());
            denied.push(LiveError::Forbidden {
                verb: w.verb.into(),
                resource: w.plural(),
                group_version: gv,
                scope: match namespace {
                    Some(ns) => format!("in namespace {ns}"),
                    None => "in all namespaces".into(),
                },
                said: match reason {
                    Some(r) => format!(" ({}; the API server says: {r})", w.purpose),
                    None => format!(" ({})", w.purpose),
                },
            });
        }
    }
    Ok(denied)
}

/// The RBAC objects that grant what `mode` needs: a ClusterRole, and with `namespace` a
/// Role there for the namespaced kinds (cluster-scoped kinds always need the
/// ClusterRole). YAML, with a comment saying how to bind it.
pub fn role_yaml(mode: Mode, namespace: Option<&str>) -> String {
    let name = format!("kubestep-{}", mode.name());
    let kinds: Vec<&Kind> = all_kinds().collect();
    let read = |namespaced: bool| -> Vec<(String, Vec<String>, Vec<&'static str>)> {
        let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
        for k in kinds.iter().filter(|k| k.namespaced == namespaced) {
            match groups.iter_mut().find(|(g, _)| *g == k.group) {
                // A kind served in two versions (DeviceTaintRule) is one resource.
                Some((_, r)) if r.iter().any(|p| p == k.plural) => {}
                Some((_, r)) => r.push(k.plural.to_string()),
                None => groups.push((k.group, vec![k.plural.to_string()])),
            }
        }
        groups
            .into_iter()
            .map(|(g, r)| (g.to_string(), r, vec!["get", "list", "watch"]))
            .collect()
    };
    let writes: Vec<(String, Vec<String>, Vec<&'static str>)> = if mode == Mode::Active {
        WRITES
            .iter()
            .map(|w| (w.group.to_string(), vec![w.plural()], vec![w.verb]))
            .collect()
    } else {
        Vec::new()
    };
    let rules = |rules: &[(String, Vec<String>, Vec<&'static str>)]| -> String {
        let mut out = String::from("rules:\n");
        for (g, r, v) in rules {
            out.push_str(&format!(
                "- apiGroups: [\"{g}\"]\n  resources: [{}]\n  verbs: [{}]\n",
                r.join(", "),
                v.join(", ")
            ));
        }
        out
    };
    let what = match mode {
        Mode::Shadow => "kubestep live (shadow mode: read only)",
        Mode::Record => "kubestep record (read only)",
        Mode::Active => "kubestep live --active (read, and write as a scheduler)",
    };
    let mut out = format!("# What {what} needs.\n");
    match namespace {
        None => {
            let mut all = read(false);
            all.extend(read(true));
            all.extend(writes);
            out.push_str(&format!(
                "# Bind it with: kubectl create clusterrolebinding {name} --clusterrole={name} --user=USER (or --serviceaccount=NS:NAME)\n"
            ));
            out.push_str(&format!(
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {name}\n"
            ));
            out.push_str(&rules(&all));
        }
        Some(ns) => {
            let mut local = read(true);
            local.extend(writes);
            out.push_str(&format!(
                "# Bind them with: kubectl create clusterrolebinding {name} --clusterrole={name} --user=USER\n#   and: kubectl -n {ns} create rolebinding {name} --role={name} --user=USER\n"
            ));
            out.push_str(&format!(
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {name}\n"
            ));
            out.push_str(&rules(&read(false)));
            out.push_str(&format!(
                "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: {name}\n  namespace: {ns}\n"
            ));
            out.push_str(&rules(&local));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_active_role_grants_reads_and_writes() {
        let y = role_yaml(Mode::Active, None);
        assert!(y.contains("kind: ClusterRole\nmetadata:\n  name: kubestep-active\n"));
        assert!(
            y.contains("- apiGroups: [\"\"]\n  resources: [pods/binding]\n  verbs: [create]\n")
        );
        assert!(y.contains("- apiGroups: [\"apps\"]\n  resources: [replicasets, statefulsets]\n  verbs: [get, list, watch]\n"), "{y}");
        let y = role_yaml(Mode::Shadow, Some("team"));
        assert!(!y.contains("binding]"), "{y}");
        assert!(y.contains("kind: Role\nmetadata:\n  name: kubestep-shadow\n  namespace: team\n"));
        // Nodes are cluster-scoped: the ClusterRole grants them, the Role cannot.
        let (cluster, local) = y.split_once("---").unwrap();
        assert!(cluster.contains("nodes"));
        assert!(!local.contains("nodes"));
    }
}
