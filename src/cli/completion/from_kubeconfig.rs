//! Names from the kubeconfig (contexts) and from its context's cluster (namespaces and
//! pods, listed as kubectl's own completion lists them: metadata only, one page). Called
//! inside [`super::lookup::within`], which bounds the time; errors are `None`.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Namespace as NamespaceObject, Pod as PodObject};
use kube::Api;
use kube::api::ListParams;

use kubestep::live::ConnectOptions;

use super::lookup::{Namespace, Pod, PodState, Scope};

/// A page as kubectl's completion asks for it: enough to choose from, small to send.
const PAGE: u32 = 1000;

/// A context of the kubeconfig.
pub struct Context {
    pub name: String,
    pub cluster: Option<String>,
    pub current: bool,
}

/// The kubeconfig's contexts (no request is made).
pub fn contexts(opts: &ConnectOptions) -> Option<Vec<Context>> {
    let (kc, _) = kubestep::live::connect::load_kubeconfig(opts).ok()??;
    let current = kc.current_context.as_deref();
    Some(
        kc.contexts
            .iter()
            .map(|c| Context {
                name: c.name.clone(),
                cluster: c.context.as_ref().map(|x| x.cluster.clone()),
                current: Some(c.name.as_str()) == current,
            })
            .collect(),
    )
}

/// Pods of the scope (`Scope::Default`: the context's namespace), those not yet on a
/// node marked pending. Finished pods are left out: the scheduler never sees them.
pub fn pods(opts: &ConnectOptions, scope: &Scope) -> Option<Vec<Pod>> {
    block_on(async {
        let conn = kubestep::live::connect(opts).await.ok()?;
        let client = conn.client;
        let api: Api<PodObject> = match scope {
            Scope::All => Api::all(client),
            Scope::Namespace(ns) => Api::namespaced(client, ns),
            Scope::Default => {
                let ns = client.default_namespace().to_string();
                Api::namespaced(client, &ns)
            }
        };
        let unfinished = "status.phase!=Succeeded,status.phase!=Failed";
        let listed = ListParams::default().limit(PAGE).fields(unfinished);
        let pending = ListParams::default()
            .limit(PAGE)
            .fields(&format!("spec.nodeName=,{unfinished}"));
        let (listed, pending) =
            tokio::join!(api.list_metadata(&listed), api.list_metadata(&pending));
        let key = |m: &kube::core::ObjectMeta| {
            Some((m.namespace.clone().unwrap_or_default(), m.name.clone()?))
        };
        // Without the pending list (an error), pods are offered all the same.
        let pending: BTreeSet<(String, String)> = pending
            .map(|l| l.items.iter().filter_map(|p| key(&p.metadata)).collect())
            .unwrap_or_default();
        let pods = listed
            .ok()?
            .items
            .iter()
            .filter_map(|p| key(&p.metadata))
            .map(|(namespace, name)| {
                let state = if pending.contains(&(namespace.clone(), name.clone())) {
                    PodState::Pending
                } else {
                    PodState::Unknown
                };
                Pod {
                    namespace,
                    name,
                    state,
                }
            })
            .collect();
        Some(pods)
    })
}

pub fn namespaces(opts: &ConnectOptions) -> Option<Vec<Namespace>> {
    block_on(async {
        let conn = kubestep::live::connect(opts).await.ok()?;
        let api: Api<NamespaceObject> = Api::all(conn.client);
        let list = api
            .list_metadata(&ListParams::default().limit(PAGE))
            .await
            .ok()?;
        Some(
            list.items
                .into_iter()
                .filter_map(|n| n.metadata.name)
                .map(|name| Namespace { name, pods: None })
                .collect(),
        )
    })
}

/// Runs a lookup on a runtime of its own (the completing process has none).
fn block_on<T>(f: impl std::future::Future<Output = Option<T>>) -> Option<T> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?
        .block_on(f)
}
