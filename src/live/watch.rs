//! Watching a live cluster: one kube-rs watcher (list, then watch; re-list after 410 Gone
//! or a lost connection, with the default backoff) per kind the engine uses, merged into a
//! single stream of changes. Each kind's objects are tracked by resourceVersion, so a
//! re-list reports only what changed while the watch was down: MODIFIED for changed
//! objects, ADDED for new ones, DELETED for those gone, nothing for the rest.
//!
//! The first list is paged as informers page it (`limit=500`, following `continue`):
//! kube-rs decodes one page at a time and hands its objects on one by one, so at most a
//! page (and the bounded channel's worth of changes) is in memory as JSON, whatever the
//! size of the cluster.

use std::collections::{HashMap, HashSet};

use futures::StreamExt;
use jiff::Timestamp;
use kube::api::{Api, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::connect::Connection;
use super::error::{Doing, LiveError, cause, classify, classify_watch, transient};
use super::kinds::{DRA, DRA_GROUP_VERSION, KINDS, Kind, POD_GROUP, TAINT_RULES};
use super::tap::WatchSignal;
use crate::recording::EventType;

/// One change to one object.
#[derive(Debug, Clone)]
pub struct Change {
    /// When kubestep received it.
    pub at: Timestamp,
    pub event: EventType,
    pub kind: &'static str,
    /// The object as the API server serves it, with apiVersion and kind set and
    /// managedFields stripped.
    pub object: Value,
    /// Part of the kind's first list: the cluster as it was when watching began.
    pub initial: bool,
}

#[derive(Debug, Clone)]
pub enum Update {
    Change(Change),
    /// The first list of a kind is complete.
    Synced {
        kind: &'static str,
        objects: usize,
    },
    /// A re-list (after 410 Gone or a lost connection) reconciled with what was known.
    Resynced {
        kind: &'static str,
        added: usize,
        modified: usize,
        deleted: usize,
    },
    /// A request failed, or a watch's connection was cut (which kube-rs would otherwise
    /// get over in silence); the watcher retries with backoff.
    Reconnecting {
        kind: &'static str,
        error: LiveError,
    },
    /// The server opened a watch of the kind: after a `Reconnecting`, the link is back.
    /// Sent for every watch opened (they are renewed every `WATCH_TIMEOUT_SECS`).
    Reconnected {
        kind: &'static str,
    },
    /// Access was refused (401 or 403): retrying cannot help until someone changes the
    /// credentials or RBAC, so the watcher of that kind stops.
    Fatal(LiveError),
    /// The API server does not serve the kinds (a list, or their group's discovery,
    /// answered 404): they are not watched, and `warning` says what kubestep will not see
    /// without them.
    Unserved {
        kinds: Vec<&'static str>,
        warning: String,
    },
}

#[derive(Debug, Clone, Default)]
pub struct WatchOptions {
    /// Namespaced kinds in this namespace only (`None`: all namespaces).
    pub namespace: Option<String>,
}

/// The running watchers. Dropping it stops them.
pub struct Watchers {
    rx: mpsc::Receiver<Update>,
    tasks: Vec<JoinHandle<()>>,
    kinds: Vec<Kind>,
}

impl Drop for Watchers {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Watchers {
    /// Starts a watcher for every kind (PodGroup only when its CRD is installed). The DRA
    /// kinds count as watched either way, so a cluster without resource.k8s.io/v1 gets
    /// one `Unserved` for the four of them, first in the channel. A discovery request that
    /// fails as a retry may get over is retried with backoff, each retry told to `retrying`
    /// ("GET /apis/resource.k8s.io/v1 failed: ...; retrying in 1s"), for as long as the
    /// caller waits (its `--duration` or a signal), as lists and watches are.
    pub async fn start(
        conn: &Connection,
        opts: &WatchOptions,
        mut retrying: impl FnMut(String),
    ) -> Result<Watchers, LiveError> {
        let Discovery {
            kinds,
            unserved_dra,
        } = discover(conn, &mut retrying).await?;
        // Bounded, so a slow consumer slows the watchers instead of growing memory.
        let (tx, rx) = mpsc::channel(1024);
        let mut all = kinds.clone();
        if let Some(warning) = unserved_dra {
            all.extend_from_slice(DRA);
            let _ = tx.try_send(Update::Unserved {
                kinds: DRA.iter().map(|k| k.kind).collect(),
                warning,
            });
        }
        let signals = conn.tap.subscribe();
        let mut paths = HashMap::new();
        let mut tasks: Vec<JoinHandle<()>> = kinds
            .iter()
            .map(|k| {
                let ar = k.api_resource();
                let api: Api<DynamicObject> = match (&opts.namespace, k.namespaced) {
                    (Some(ns), true) => Api::namespaced_with(conn.client.clone(), ns, &ar),
                    _ => Api::all_with(conn.client.clone(), &ar),
                };
                paths.insert(api.resource_url().to_string(), *k);
                let w = KindWatch {
                    kind: *k,
                    namespace: opts.namespace.clone().filter(|_| k.namespaced),
                    server: conn.server().to_string(),
                    tx: tx.clone(),
                };
                tokio::spawn(w.run(api))
            })
            .collect();
        tasks.push(tokio::spawn(relay_signals(signals, paths, tx)));
        Ok(Watchers {
            rx,
            tasks,
            kinds: all,
        })
    }

    pub fn kinds(&self) -> &[Kind] {
        &self.kinds
    }

    /// The next update; `None` once every watcher has stopped.
    pub async fn next(&mut self) -> Option<Update> {
        self.rx.recv().await
    }

    /// An update if one is ready.
    pub fn try_next(&mut self) -> Option<Update> {
        self.rx.try_recv().ok()
    }
}

/// What the client's layer saw of each watch (see `tap`), as updates of the kind watched:
/// a cut connection is `Reconnecting` (kube-rs restarts the watch on its own), an opened
/// watch `Reconnected`.
async fn relay_signals(
    mut signals: mpsc::UnboundedReceiver<WatchSignal>,
    paths: HashMap<String, Kind>,
    tx: mpsc::Sender<Update>,
) {
    while let Some(s) = signals.recv().await {
        let u = match s {
            WatchSignal::Opened { path } => match paths.get(&path) {
                Some(k) => Update::Reconnected { kind: k.kind },
                None => continue,
            },
            WatchSignal::Cut { path, error } => match paths.get(&path) {
                Some(k) => Update::Reconnecting {
                    kind: k.kind,
                    error: LiveError::Api {
                        what: format!("watch {} ({})", k.plural, k.group_version()),
                        message: error,
                    },
                },
                None => continue,
            },
        };
        if tx.send(u).await.is_err() {
            return;
        }
    }
}

/// The `timeoutSeconds` of every watch request.
pub const WATCH_TIMEOUT_SECS: u32 = 50;

/// The kinds a cluster serves, of those kubestep reads.
pub struct Discovery {
    /// Every kind to read: the ones always read, the DRA kinds and the DeviceTaintRule
    /// version the server serves, PodGroup when its CRD is installed.
    pub kinds: Vec<Kind>,
    /// resource.k8s.io/v1 is not served: what that means, in words (one warning for the
    /// four DRA kinds).
    pub unserved_dra: Option<String>,
}

/// Asks the server which of the optional kinds it serves. A discovery request that fails
/// as a retry may get over is retried with backoff, each retry told to `retrying`.
pub async fn discover(
    conn: &Connection,
    retrying: &mut impl FnMut(String),
) -> Result<Discovery, LiveError> {
    let mut kinds = KINDS.to_vec();
    let dra_served = served(
        conn,
        DRA_GROUP_VERSION,
        DRA[0].plural,
        "the DRA kinds",
        retrying,
    )
    .await?;
    if served(
        conn,
        &POD_GROUP.api_version(),
        POD_GROUP.plural,
        "podgroups",
        retrying,
    )
    .await?
    {
        kinds.push(POD_GROUP);
    }
    let mut unserved_dra = None;
    if !dra_served {
        unserved_dra = Some(format!(
            "{DRA_GROUP_VERSION} (DeviceClasses, ResourceSlices, ResourceClaims, \
             ResourceClaimTemplates) is not served by the API server at {} (404): \
             skipped, so kubestep will not see {}",
            conn.server(),
            unserved_consequence("ResourceClaim").unwrap_or_default()
        ));
    } else {
        kinds.extend_from_slice(DRA);
        // DeviceTaintRules where the server serves them (they matter only with
        // DRADeviceTaintRules on in the scheduler followed; read either way).
        for k in TAINT_RULES {
            let gv = k.api_version();
            if served(conn, &gv, k.plural, "devicetaintrules", retrying).await? {
                kinds.push(*k);
                break;
            }
        }
    }
    Ok(Discovery {
        kinds,
        unserved_dra,
    })
}

/// Objects per page of a first list (`limit`): client-go's informers ask for 500.
pub const LIST_PAGE_SIZE: u32 = 500;

/// A list or watch answered 404: the resource is not served.
fn not_served(e: &watcher::Error) -> bool {
    use watcher::Error as W;
    match e {
        W::InitialListFailed(kube::Error::Api(s))
        | W::WatchStartFailed(kube::Error::Api(s))
        | W::WatchFailed(kube::Error::Api(s)) => s.code == 404,
        W::WatchError(s) => s.code == 404,
        _ => false,
    }
}

/// What is lost when a kind is not served; `None` for the kinds nothing works without.
pub fn unserved_consequence(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "Node" | "Pod" => return None,
        "Namespace" => "Namespaces: pod affinity terms with a namespaceSelector match no namespace",
        "PriorityClass" => {
            "PriorityClasses: a pod's priority is read from its spec alone, and a class's preemptionPolicy is unknown"
        }
        "StorageClass" => {
            "StorageClasses: VolumeBinding cannot bind or provision claims of a class (WaitForFirstConsumer claims stay unschedulable)"
        }
        "CSINode" => "CSINodes: per-node CSI volume limits (NodeVolumeLimits) are not applied",
        "CSIDriver" => {
            "CSIDrivers: storage capacity is never checked, and with VolumeLimitScaling NodeVolumeLimits does not check that a volume's CSI driver is installed on the node"
        }
        "CSIStorageCapacity" => {
            "CSIStorageCapacities: claims of drivers that track storage capacity find no room to be provisioned"
        }
        "PersistentVolume" => {
            "PersistentVolumes: pods with unbound claims find no volume to bind, and volume zones are unknown"
        }
        "PersistentVolumeClaim" => {
            "PersistentVolumeClaims: pods that use a claim are unschedulable (claim not found)"
        }
        "PodDisruptionBudget" => {
            "PodDisruptionBudgets: preemption may choose victims a budget protects"
        }
        "Service" => {
            "Services: PodTopologySpread's system-default spreading does not group pods by the Services that select them"
        }
        "ReplicaSet" => {
            "ReplicaSets: PodTopologySpread's system-default spreading does not group pods by the ReplicaSet that owns them"
        }
        "StatefulSet" => {
            "StatefulSets: PodTopologySpread's system-default spreading does not group pods by the StatefulSet that owns them"
        }
        "ReplicationController" => {
            "ReplicationControllers: PodTopologySpread's system-default spreading does not group pods by the controller that owns them"
        }
        "PodGroup" => "PodGroups: Coscheduling finds no pod group for its pods",
        "ResourceClaim" | "ResourceClaimTemplate" | "DeviceClass" | "ResourceSlice" => {
            "DRA objects: pods that use ResourceClaims are unschedulable (claim not found), and no node offers devices"
        }
        _ => "objects of this kind",
    })
}

/// Whether `group_version` is served with `plural` among its resources (404: it is not;
/// the PodGroup CRD is not installed, say). `looking_for` names what the answer decides,
/// for an error that ends the run.
async fn served(
    conn: &Connection,
    group_version: &str,
    plural: &str,
    looking_for: &str,
    retrying: &mut impl FnMut(String),
) -> Result<bool, LiveError> {
    let request = format!("GET /apis/{group_version}");
    let answer = with_retries(&request, retrying, || {
        conn.client.list_api_group_resources(group_version)
    })
    .await;
    match answer {
        Ok(list) => Ok(list.resources.iter().any(|r| r.name == plural)),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
        Err(e) if matches!(&e, kube::Error::Api(s) if s.code == 401 || s.code == 403) => {
            Err(get_failed(&e, conn))
        }
        Err(e) => Err(LiveError::Api {
            what: format!(
                "{request} (discovery: whether {} serves {looking_for})",
                conn.server()
            ),
            message: cause(&e),
        }),
    }
}

/// A discovery GET that failed, in words.
fn get_failed(e: &kube::Error, conn: &Connection) -> LiveError {
    let doing = Doing {
        verb: "get",
        kind: None,
        namespace: None,
        server: conn.server(),
    };
    classify(e, doing)
}

/// Asks `/version` (the first request, so an unreachable server or refused credentials
/// are said before anything else) and notes the version in `conn.source`. A failure a
/// retry may get over (a 5xx, a dropped connection) is retried with backoff, each retry
/// told to `retrying`, for as long as the caller waits, as lists are; a refused connection
/// (nothing listens there), 401 or 403 ends it at once.
pub async fn check_version(
    conn: &mut Connection,
    mut retrying: impl FnMut(String),
) -> Result<String, LiveError> {
    let client = conn.client.clone();
    let answer = with_retries("GET /version", &mut retrying, || client.apiserver_version()).await;
    let info = answer.map_err(|e| get_failed(&e, conn))?;
    conn.source.kubernetes_version = Some(info.git_version.clone());
    Ok(info.git_version)
}

/// The first wait between retries; it doubles up to `RETRY_MAX`, as kube-rs's backoff
/// for lists and watches does (from 0.8 s to 30 s).
const RETRY_FIRST: std::time::Duration = std::time::Duration::from_secs(1);
const RETRY_MAX: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs `attempt` until it succeeds or fails in a way a retry cannot get over; each retry
/// is told to `retrying`. Only the caller's `--duration` or a signal ends it otherwise.
async fn with_retries<T, F>(
    request: &str,
    retrying: &mut impl FnMut(String),
    mut attempt: impl FnMut() -> F,
) -> Result<T, kube::Error>
where
    F: std::future::Future<Output = Result<T, kube::Error>>,
{
    let mut wait = RETRY_FIRST;
    loop {
        match attempt().await {
            Ok(v) => return Ok(v),
            Err(e) => {
                if !transient(&e) {
                    return Err(e);
                }
                retrying(format!(
                    "{request} failed: {}; retrying in {}s",
                    cause(&e),
                    wait.as_secs()
                ));
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(RETRY_MAX);
            }
        }
    }
}

/// What is known of an object: its resourceVersion, and its UID for the DELETED a re-list
/// infers. Not its last state: on a large cluster that would be every object's JSON held
/// for as long as kubestep runs (hundreds of MB at 150,000 pods), and whoever applies a
/// deletion finds the object by its key.
struct Known {
    rv: Box<str>,
    uid: Option<Box<str>>,
}

struct KindWatch {
    kind: Kind,
    namespace: Option<String>,
    server: String,
    tx: mpsc::Sender<Update>,
}

#[derive(Default)]
struct Relist {
    seen: HashSet<String>,
    added: usize,
    modified: usize,
}

impl KindWatch {
    async fn run(self, api: Api<DynamicObject>) {
        // The server ends each watch well inside the client's read timeout, so a quiet
        // watch is never taken for a dead connection.
        // Listing then watching (not a streaming list) works with every server version;
        // the page size is set here, not left to kube-rs's default.
        let config = watcher::Config::default()
            .timeout(WATCH_TIMEOUT_SECS)
            .page_size(LIST_PAGE_SIZE);
        let mut stream = watcher::watcher(api, config).default_backoff().boxed();
        let mut known: HashMap<String, Known> = HashMap::new();
        let mut relist: Option<Relist> = None;
        let mut synced = false;
        while let Some(item) = stream.next().await {
            let mut out = Vec::new();
            match item {
                Ok(Event::Init) => relist = Some(Relist::default()),
                Ok(Event::InitApply(o)) => {
                    let r = relist.get_or_insert_with(Relist::default);
                    let (key, rv, value) = self.prepare(o);
                    r.seen.insert(key.clone());
                    match self.upsert(&mut known, key, rv, value, !synced) {
                        Some(c) if c.event == EventType::Added => {
                            r.added += 1;
                            out.push(Update::Change(c));
                        }
                        Some(c) => {
                            r.modified += 1;
                            out.push(Update::Change(c));
                        }
                        None => {}
                    }
                }
                Ok(Event::InitDone) => {
                    let r = relist.take().unwrap_or_default();
                    let gone: Vec<String> = known
                        .keys()
                        .filter(|k| !r.seen.contains(*k))
                        .cloned()
                        .collect();
                    for key in &gone {
                        if let Some(k) = known.remove(key) {
                            let object = self.tombstone(key, &k);
                            out.push(Update::Change(self.change(
                                EventType::Deleted,
                                object,
                                false,
                            )));
                        }
                    }
                    if !synced {
                        known.shrink_to_fit();
                    }
                    out.push(if synced {
                        Update::Resynced {
                            kind: self.kind.kind,
                            added: r.added,
                            modified: r.modified,
                            deleted: gone.len(),
                        }
                    } else {
                        Update::Synced {
                            kind: self.kind.kind,
                            objects: known.len(),
                        }
                    });
                    synced = true;
                }
                Ok(Event::Apply(o)) => {
                    let (key, rv, value) = self.prepare(o);
                    if let Some(c) = self.upsert(&mut known, key, rv, value, false) {
                        out.push(Update::Change(c));
                    }
                }
                Ok(Event::Delete(o)) => {
                    let (key, _, value) = self.prepare(o);
                    // A deletion of something never seen would be a phantom.
                    if known.remove(&key).is_some() {
                        out.push(Update::Change(self.change(
                            EventType::Deleted,
                            value,
                            false,
                        )));
                    }
                }
                Err(e) => {
                    if not_served(&e) {
                        let _ = self.tx.send(self.unserved()).await;
                        return;
                    }
                    let error =
                        classify_watch(&e, &self.kind, self.namespace.as_deref(), &self.server);
                    if error.is_access_denied() {
                        let _ = self.tx.send(Update::Fatal(error)).await;
                        return;
                    }
                    out.push(Update::Reconnecting {
                        kind: self.kind.kind,
                        error,
                    });
                }
            }
            for u in out {
                if self.tx.send(u).await.is_err() {
                    return;
                }
            }
        }
    }

    /// Why the kind is skipped, or a fatal error for the kinds kubestep cannot do without.
    fn unserved(&self) -> Update {
        let k = &self.kind;
        let what = format!(
            "{} ({} {}) is not served by the API server at {} (404)",
            k.kind,
            k.group_version(),
            k.plural,
            self.server
        );
        match unserved_consequence(k.kind) {
            Some(c) => Update::Unserved {
                kinds: vec![k.kind],
                warning: format!("{what}: skipped, so kubestep will not see {c}"),
            },
            None => Update::Fatal(LiveError::Api {
                what,
                message: "kubestep cannot schedule without it".into(),
            }),
        }
    }

    /// The object's key, resourceVersion and JSON (apiVersion and kind set, which list
    /// items lack; managedFields dropped). The body (spec, status) is moved, not copied:
    /// only the metadata is serialized again.
    fn prepare(&self, mut o: DynamicObject) -> (String, String, Value) {
        o.metadata.managed_fields = None;
        let name = o.metadata.name.clone().unwrap_or_default();
        let key = match &o.metadata.namespace {
            Some(ns) if self.kind.namespaced => format!("{ns}/{name}"),
            _ => name,
        };
        let rv = o.metadata.resource_version.clone().unwrap_or_default();
        let mut m = serde_json::Map::new();
        m.insert("apiVersion".into(), self.kind.api_version().into());
        m.insert("kind".into(), self.kind.kind.into());
        m.insert(
            "metadata".into(),
            serde_json::to_value(&o.metadata).unwrap_or(Value::Null),
        );
        if let Value::Object(body) = std::mem::take(&mut o.data) {
            m.extend(body);
        }
        (key, rv, Value::Object(m))
    }

    /// What a DELETED inferred by a re-list carries: the object's identity (kind, name,
    /// namespace, UID, last resourceVersion seen).
    fn tombstone(&self, key: &str, k: &Known) -> Value {
        let (namespace, name) = match key.split_once('/') {
            Some((ns, name)) if self.kind.namespaced => (Some(ns), name),
            _ => (None, key),
        };
        let mut meta = serde_json::Map::new();
        meta.insert("name".into(), name.into());
        if let Some(ns) = namespace {
            meta.insert("namespace".into(), ns.into());
        }
        if let Some(uid) = &k.uid {
            meta.insert("uid".into(), uid.as_ref().into());
        }
        meta.insert("resourceVersion".into(), k.rv.as_ref().into());
        serde_json::json!({
            "apiVersion": self.kind.api_version(),
            "kind": self.kind.kind,
            "metadata": meta,
        })
    }

    /// Records the object; the change to report, or `None` when nothing changed (the same
    /// resourceVersion seen again after a reconnect).
    fn upsert(
        &self,
        known: &mut HashMap<String, Known>,
        key: String,
        rv: String,
        value: Value,
        initial: bool,
    ) -> Option<Change> {
        let event = match known.get(&key) {
            Some(k) if !rv.is_empty() && *k.rv == *rv => return None,
            Some(_) => EventType::Modified,
            None => EventType::Added,
        };
        let uid = value["metadata"]["uid"].as_str().map(Box::from);
        known.insert(
            key,
            Known {
                rv: rv.into_boxed_str(),
                uid,
            },
        );
        Some(self.change(event, value, initial))
    }

    fn change(&self, event: EventType, object: Value, initial: bool) -> Change {
        Change {
            at: Timestamp::now(),
            event,
            kind: self.kind.kind,
            object,
            initial,
        }
    }
}
