//! A loopback Kubernetes API server for tests: a small HTTP/1.1 server on 127.0.0.1 that
//! speaks the real API for the kinds kubestep uses, so kubestep is exercised through
//! kube-rs's real HTTP client.
//!
//! What it does, as kube-apiserver does:
//! * discovery (`/api`, `/api/v1`, `/apis`, `/apis/G/V`, `/version`); the PodGroup CRD
//!   (`scheduling.x-k8s.io/v1alpha1`) present or absent (404);
//! * lists with `resourceVersion`, `limit` and `continue` (pages from a consistent
//!   snapshot; list items carry no kind/apiVersion, as the real server's don't);
//! * `?watch=true` chunked streams of watch events from a resourceVersion, with BOOKMARKs
//!   when `allowWatchBookmarks=true`, ending at `timeoutSeconds`;
//! * 410 Gone: watches from a compacted resourceVersion get an ERROR event with code 410,
//!   and [`ApiServer::expire_watches`] sends one to every open watch;
//! * `POST pods/NAME/binding`, `PATCH pods/NAME/status`, `DELETE pods/NAME`, `POST events`
//!   (core/v1 and events.k8s.io/v1);
//! * bearer-token authentication (401) and RBAC denials per verb and resource (403 with a
//!   Status body worded as the real server words it).
//!
//! Every request is logged (method, path, query) so tests can prove read-only behaviour;
//! [`ApiServer::drop_connections`] cuts every open connection.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A resource the server serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resource {
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
}

impl Resource {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

const fn res(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
) -> Resource {
    Resource {
        group,
        version,
        plural,
        kind,
        namespaced,
    }
}

pub const RESOURCES: &[Resource] = &[
    res("", "v1", "nodes", "Node", false),
    res("", "v1", "pods", "Pod", true),
    res("", "v1", "namespaces", "Namespace", false),
    res("", "v1", "persistentvolumes", "PersistentVolume", false),
    res(
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        true,
    ),
    res("", "v1", "services", "Service", true),
    res(
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        true,
    ),
    res("", "v1", "events", "Event", true),
    res("", "v1", "configmaps", "ConfigMap", true),
    res("apps", "v1", "replicasets", "ReplicaSet", true),
    res("apps", "v1", "statefulsets", "StatefulSet", true),
    res(
        "storage.k8s.io",
        "v1",
        "storageclasses",
        "StorageClass",
        false,
    ),
    res("storage.k8s.io", "v1", "csinodes", "CSINode", false),
    res(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        true,
    ),
    res(
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "PriorityClass",
        false,
    ),
    res("events.k8s.io", "v1", "events", "Event", true),
    res(
        "scheduling.x-k8s.io",
        "v1alpha1",
        "podgroups",
        "PodGroup",
        true,
    ),
    res(
        "resource.k8s.io",
        "v1",
        "deviceclasses",
        "DeviceClass",
        false,
    ),
    res(
        "resource.k8s.io",
        "v1",
        "resourceslices",
        "ResourceSlice",
        false,
    ),
    res(
        "resource.k8s.io",
        "v1",
        "resourceclaims",
        "ResourceClaim",
        true,
    ),
    res(
        "resource.k8s.io",
        "v1",
        "resourceclaimtemplates",
        "ResourceClaimTemplate",
        true,
    ),
];

const POD_GROUP_GROUP: &str = "scheduling.x-k8s.io";
const DRA_GROUP: &str = "resource.k8s.io";

/// One request as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub query: String,
    /// The User-Agent header, as sent.
    pub user_agent: Option<String>,
}

impl Request {
    pub fn is_watch(&self) -> bool {
        self.query
            .split('&')
            .any(|p| p == "watch=true" || p == "watch=1")
    }
}

#[derive(Debug, Clone)]
struct Change {
    rv: u64,
    res: usize,
    namespace: String,
    event: &'static str,
    object: Value,
}

/// (resource index, namespace or "", name)
type Key = (usize, String, String);

#[derive(Debug, Default)]
struct Denial {
    verb: String,
    plural: String,
    namespace: Option<String>,
}

#[derive(Debug)]
struct State {
    rv: u64,
    objects: BTreeMap<Key, Value>,
    log: Vec<Change>,
    /// Watches and continue tokens from before this resourceVersion get 410 Gone.
    floor: u64,
    /// Bumped by `expire_watches`: open watches end with a 410 ERROR event.
    expire_gen: u64,
    requests: Vec<Request>,
    denials: Vec<Denial>,
    /// The `Authorization` header every request must carry, when set.
    token: Option<String>,
    user: String,
    pod_groups: bool,
    /// Whether resource.k8s.io/v1 (DRA) is served; off by default, as a server without
    /// DRA enabled.
    dra: bool,
    pages: HashMap<u64, (u64, Arc<Vec<Value>>)>,
    next_page: u64,
    bookmark_every: Duration,
    open_watches: usize,
    events: Vec<Value>,
    version: String,
    /// Pods (namespace, name) another scheduler binds to a node just before a client's
    /// binding request arrives, so that request gets 409 Conflict.
    races: Vec<(String, String, String)>,
    /// Resources (plural) not served: their requests get 404, discovery omits them.
    unserved: Vec<String>,
    /// Lists (of the plurals given, or every list when empty) answered with a fault.
    list_fault: Option<(ListFault, Vec<String>)>,
    /// Requests are read and never answered.
    silent: bool,
    /// Writes (other than access reviews) are read and never answered.
    hang_writes: bool,
    /// Every watch request is answered 500.
    fail_watches: bool,
    /// The next GET requests whose path starts with the prefix get the fault, as many
    /// times as the count says.
    request_faults: Vec<(String, RequestFault, usize)>,
}

/// How one request is answered when a fault is set for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestFault {
    /// 500 Internal Server Error with a Status body.
    InternalError,
    /// The connection is closed without an answer.
    Drop,
}

/// What `serve_connection` does with a request before `handle` sees it.
enum Fault {
    Hang,
    Drop,
    Reply(Reply),
}

/// How a list is answered when faults are on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListFault {
    /// 500 Internal Server Error with a Status body.
    InternalError,
    /// 200 OK with a body that is not JSON.
    NotJson,
}

struct Shared {
    state: Mutex<State>,
    /// Bumped on every change, so watches wake up.
    changed: watch::Sender<u64>,
    /// Bumped by `drop_connections`.
    kill: watch::Sender<u64>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn notify(&self) {
        self.changed.send_modify(|g| *g += 1);
    }
}

/// The server; it stops when dropped.
pub struct ApiServer {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    rt: Option<tokio::runtime::Runtime>,
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            // Allowed inside async tests too, unlike dropping the runtime.
            rt.shutdown_background();
        }
    }
}

impl ApiServer {
    pub fn start() -> ApiServer {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("test API server runtime");
        let listener = rt
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                rv: 100,
                objects: BTreeMap::new(),
                log: Vec::new(),
                floor: 0,
                expire_gen: 0,
                requests: Vec::new(),
                denials: Vec::new(),
                token: None,
                user: "system:serviceaccount:kubestep:tester".into(),
                pod_groups: false,
                dra: false,
                pages: HashMap::new(),
                next_page: 1,
                bookmark_every: Duration::from_millis(500),
                open_watches: 0,
                events: Vec::new(),
                version: "v1.35.4".into(),
                races: Vec::new(),
                unserved: Vec::new(),
                list_fault: None,
                silent: false,
                hang_writes: false,
                fail_watches: false,
                request_faults: Vec::new(),
            }),
            changed: watch::channel(0).0,
            kill: watch::channel(0).0,
        });
        let s = shared.clone();
        rt.spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    continue;
                };
                let s = s.clone();
                let mut kill = s.kill.subscribe();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = serve_connection(sock, s.clone()) => {}
                        _ = kill.changed() => {}
                    }
                });
            }
        });
        ApiServer {
            addr,
            shared,
            rt: Some(rt),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    // ---------- objects ----------

    /// Creates or replaces an object (ADDED or MODIFIED); returns its resourceVersion.
    pub fn apply(&self, mut obj: Value) -> u64 {
        let kind = obj["kind"].as_str().unwrap_or_default().to_string();
        let api_version = obj["apiVersion"].as_str().unwrap_or_default().to_string();
        let r = RESOURCES
            .iter()
            .position(|r| r.kind == kind && r.api_version() == api_version)
            .unwrap_or_else(|| panic!("test API server: unknown kind {api_version} {kind}"));
        let mut st = self.shared.lock();
        let ns = if RESOURCES[r].namespaced {
            obj["metadata"]["namespace"]
                .as_str()
                .unwrap_or("default")
                .to_string()
        } else {
            String::new()
        };
        if RESOURCES[r].namespaced {
            obj["metadata"]["namespace"] = json!(ns);
        }
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let key = (r, ns, name);
        let rv = st.upsert(key, obj);
        drop(st);
        self.shared.notify();
        rv
    }

    /// Deletes an object by kind; returns whether it existed.
    pub fn delete(&self, kind: &str, namespace: Option<&str>, name: &str) -> bool {
        let Some(r) = RESOURCES.iter().position(|r| r.kind == kind) else {
            return false;
        };
        let ns = if RESOURCES[r].namespaced {
            namespace.unwrap_or("default").to_string()
        } else {
            String::new()
        };
        let found = self
            .shared
            .lock()
            .remove(&(r, ns, name.to_string()))
            .is_some();
        self.shared.notify();
        found
    }

    pub fn get(&self, kind: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        let r = RESOURCES.iter().position(|r| r.kind == kind)?;
        let ns = if RESOURCES[r].namespaced {
            namespace.unwrap_or("default").to_string()
        } else {
            String::new()
        };
        self.shared
            .lock()
            .objects
            .get(&(r, ns, name.to_string()))
            .cloned()
    }

    /// The current resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.shared.lock().rv
    }

    // ---------- faults and settings ----------

    /// Compacts history (watches from before now get 410) and ends every open watch with
    /// a 410 Gone ERROR event, as kube-apiserver does when a watcher falls too far behind.
    pub fn expire_watches(&self) {
        let mut st = self.shared.lock();
        st.floor = st.rv + 1;
        st.expire_gen += 1;
        st.pages.clear();
        drop(st);
        self.shared.notify();
    }

    /// Compacts history without telling open watches: a client that reconnects from an
    /// older resourceVersion gets 410.
    pub fn compact(&self) {
        let mut st = self.shared.lock();
        st.floor = st.rv + 1;
        st.pages.clear();
    }

    /// Cuts every open connection (watches included), as a restarting server would.
    pub fn drop_connections(&self) {
        self.shared.kill.send_modify(|g| *g += 1);
    }

    /// Denies `verb` on `plural` (e.g. "list", "pods" or "create", "pods/binding"), in one
    /// namespace or everywhere.
    pub fn deny(&self, verb: &str, plural: &str, namespace: Option<&str>) {
        self.shared.lock().denials.push(Denial {
            verb: verb.into(),
            plural: plural.into(),
            namespace: namespace.map(str::to_string),
        });
    }

    /// Makes another scheduler win the race for pod `namespace/name`: when a binding for it
    /// arrives, the pod is first bound to `node`, and the request gets 409 Conflict.
    pub fn race_binding(&self, namespace: &str, name: &str, node: &str) {
        self.shared
            .lock()
            .races
            .push((namespace.into(), name.into(), node.into()));
    }

    /// Stops serving a resource (by plural, e.g. "replicasets"), as a server without
    /// that API does: lists and watches get 404 and discovery omits it.
    pub fn unserve(&self, plural: &str) {
        self.shared.lock().unserved.push(plural.into());
    }

    /// Answers lists of `plurals` (every list when empty) with `fault`, or lifts it.
    pub fn fail_lists(&self, fault: Option<ListFault>, plurals: &[&str]) {
        self.shared.lock().list_fault =
            fault.map(|f| (f, plurals.iter().map(|p| p.to_string()).collect()));
    }

    /// Accepts connections and reads requests but never answers (a hung server).
    pub fn go_silent(&self) {
        self.shared.lock().silent = true;
    }

    /// Reads writes (binding, events, status patches, deletions; not access reviews) and
    /// never answers them, or answers them again.
    pub fn hang_writes(&self, on: bool) {
        self.shared.lock().hang_writes = on;
    }

    /// Answers every watch request with 500 (lists still work), or lifts it.
    pub fn fail_watches(&self, on: bool) {
        self.shared.lock().fail_watches = on;
    }

    /// Answers the next `times` GET requests whose path starts with `prefix` (watches
    /// aside) with `fault`.
    pub fn fail_requests(&self, prefix: &str, fault: RequestFault, times: usize) {
        self.shared
            .lock()
            .request_faults
            .push((prefix.into(), fault, times));
    }

    /// Requires `Authorization: Bearer TOKEN`; anything else gets 401.
    pub fn require_token(&self, token: &str) {
        self.shared.lock().token = Some(format!("Bearer {token}"));
    }

    /// Requires exactly this `Authorization` header (basic auth, for one); anything else
    /// gets 401.
    pub fn require_authorization(&self, header: &str) {
        self.shared.lock().token = Some(header.into());
    }

    /// Serves (or not) the DRA kinds' API group, resource.k8s.io/v1.
    pub fn set_dra(&self, on: bool) {
        self.shared.lock().dra = on;
    }

    /// Serves (or not) the PodGroup CRD's API group.
    pub fn set_pod_groups(&self, on: bool) {
        self.shared.lock().pod_groups = on;
    }

    pub fn set_bookmark_interval(&self, every: Duration) {
        self.shared.lock().bookmark_every = every;
    }

    // ---------- observation ----------

    pub fn requests(&self) -> Vec<Request> {
        self.shared.lock().requests.clone()
    }

    /// Requests other than GET.
    pub fn writes(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.method != "GET")
            .collect()
    }

    /// Events created by clients (core/v1 and events.k8s.io/v1).
    pub fn events(&self) -> Vec<Value> {
        self.shared.lock().events.clone()
    }

    pub fn open_watches(&self) -> usize {
        self.shared.lock().open_watches
    }

    /// Waits until `pred` holds (polling), or panics after `timeout`.
    pub fn wait_until(&self, what: &str, timeout: Duration, pred: impl Fn(&ApiServer) -> bool) {
        let deadline = std::time::Instant::now() + timeout;
        while !pred(self) {
            if std::time::Instant::now() > deadline {
                panic!(
                    "timed out waiting for {what}; requests so far: {:#?}",
                    self.requests()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Writes a kubeconfig for this server (context "fake", cluster "fake-cluster"), with a
    /// bearer token when given.
    pub fn write_kubeconfig(&self, dir: &Path, token: Option<&str>) -> PathBuf {
        let user = match token {
            Some(t) => format!("  user:\n    token: {t}\n"),
            None => "  user: {}\n".to_string(),
        };
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake-cluster\n  cluster:\n    server: {}\ncontexts:\n- name: fake\n  context:\n    cluster: fake-cluster\n    user: tester\ncurrent-context: fake\nusers:\n- name: tester\n{user}",
            self.url()
        );
        let path = dir.join("kubeconfig");
        std::fs::write(&path, text).expect("write kubeconfig");
        path
    }
}

impl State {
    /// The fault set for `req`, if any (the request is logged then, as `handle` would).
    fn fault(&mut self, req: &HttpRequest) -> Option<Fault> {
        let watch = req.param("watch").is_some_and(|w| w == "true" || w == "1");
        let review = req.path.ends_with("/selfsubjectaccessreviews");
        let fault = if self.hang_writes && req.method != "GET" && !review {
            Fault::Hang
        } else if self.fail_watches && watch {
            Fault::Reply(internal_error())
        } else {
            let i = self.request_faults.iter().position(|(prefix, _, n)| {
                *n > 0 && req.method == "GET" && !watch && req.path.starts_with(prefix.as_str())
            })?;
            let (_, f, n) = &mut self.request_faults[i];
            *n -= 1;
            match f {
                RequestFault::InternalError => Fault::Reply(internal_error()),
                RequestFault::Drop => Fault::Drop,
            }
        };
        self.requests.push(Request {
            method: req.method.clone(),
            path: req.path.clone(),
            query: req.query.clone(),
            user_agent: req.header("user-agent").map(str::to_string),
        });
        Some(fault)
    }

    fn upsert(&mut self, key: Key, mut obj: Value) -> u64 {
        self.rv += 1;
        let rv = self.rv;
        let existed = self.objects.get(&key).cloned();
        let m = &mut obj["metadata"];
        m["resourceVersion"] = json!(rv.to_string());
        if m.get("uid").is_none() {
            let uid = existed
                .as_ref()
                .and_then(|o| o["metadata"]["uid"].as_str().map(str::to_string))
                .unwrap_or_else(|| format!("uid-{}-{}-{}", key.0, key.1, key.2));
            m["uid"] = json!(uid);
        }
        if m.get("creationTimestamp").is_none() {
            m["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        let event = if existed.is_some() {
            "MODIFIED"
        } else {
            "ADDED"
        };
        self.log.push(Change {
            rv,
            res: key.0,
            namespace: key.1.clone(),
            event,
            object: obj.clone(),
        });
        self.objects.insert(key, obj);
        rv
    }

    fn remove(&mut self, key: &Key) -> Option<Value> {
        let mut obj = self.objects.remove(key)?;
        self.rv += 1;
        obj["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        self.log.push(Change {
            rv: self.rv,
            res: key.0,
            namespace: key.1.clone(),
            event: "DELETED",
            object: obj.clone(),
        });
        Some(obj)
    }

    fn denied(&self, verb: &str, plural: &str, namespace: &str) -> bool {
        self.denials.iter().any(|d| {
            d.verb == verb
                && d.plural == plural
                && d.namespace.as_deref().is_none_or(|n| n == namespace)
        })
    }

    fn served(&self, r: &Resource) -> bool {
        (r.group != POD_GROUP_GROUP || self.pod_groups)
            && (r.group != DRA_GROUP || self.dra)
            && !self.unserved.iter().any(|p| p == r.plural)
    }

    /// Whether `verb` on `plural` is denied anywhere: a review for all namespaces asks
    /// about every one of them.
    fn denied_somewhere(&self, verb: &str, plural: &str) -> bool {
        self.denials
            .iter()
            .any(|d| d.verb == verb && d.plural == plural)
    }
}

// ---------- HTTP ----------

struct HttpRequest {
    method: String,
    path: String,
    query: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl HttpRequest {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn param(&self, name: &str) -> Option<String> {
        self.query.split('&').find_map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (k == name).then(|| percent_decode(v))
        })
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn read_request(r: &mut BufReader<TcpStream>) -> Option<HttpRequest> {
    let mut line = String::new();
    if r.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let target = parts.next()?.to_string();
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_string(), q.to_string()),
        None => (target, String::new()),
    };
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).await.ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    r.read_exact(&mut body).await.ok()?;
    Some(HttpRequest {
        method,
        path,
        query,
        headers,
        body,
    })
}

enum Reply {
    Json(u16, Value),
    Watch(WatchSpec),
    /// A 200 whose body is not JSON (a proxy's error page, say).
    Text(String),
}

struct WatchSpec {
    res: usize,
    namespace: Option<String>,
    from: u64,
    bookmarks: bool,
    timeout: Duration,
}

async fn serve_connection(sock: TcpStream, s: Arc<Shared>) {
    let mut r = BufReader::new(sock);
    while let Some(req) = read_request(&mut r).await {
        if s.lock().silent {
            // Holds the connection open and says nothing, for as long as the client waits.
            std::future::pending::<()>().await;
        }
        // Bound first: the lock must not be held across the wait below.
        let fault = s.lock().fault(&req);
        let reply = match fault {
            Some(Fault::Hang) => std::future::pending().await,
            Some(Fault::Drop) => return,
            Some(Fault::Reply(r)) => r,
            None => handle(&req, &s),
        };
        let ok = match reply {
            Reply::Json(code, body) => write_json(r.get_mut(), code, &body).await,
            Reply::Text(text) => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n",
                    text.len()
                );
                let w = r.get_mut();
                w.write_all(head.as_bytes()).await.is_ok()
                    && w.write_all(text.as_bytes()).await.is_ok()
            }
            Reply::Watch(spec) => {
                let _open = OpenWatch::new(&s);
                stream_watch(r.get_mut(), &s, spec).await
            }
        };
        if !ok {
            return;
        }
    }
}

/// Counts an open watch for as long as it lives, however the connection ends.
struct OpenWatch(Arc<Shared>);

impl OpenWatch {
    fn new(s: &Arc<Shared>) -> OpenWatch {
        s.lock().open_watches += 1;
        OpenWatch(s.clone())
    }
}

impl Drop for OpenWatch {
    fn drop(&mut self) {
        self.0.lock().open_watches -= 1;
    }
}

fn reason_phrase(code: u16) -> &'static str {
    match code {
        200 => "OK",
        201 => "Created",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        410 => "Gone",
        500 => "Internal Server Error",
        _ => "Error",
    }
}

async fn write_json(w: &mut TcpStream, code: u16, body: &Value) -> bool {
    let text = body.to_string();
    let head = format!(
        "HTTP/1.1 {code} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        reason_phrase(code),
        text.len()
    );
    w.write_all(head.as_bytes()).await.is_ok() && w.write_all(text.as_bytes()).await.is_ok()
}

async fn write_chunk(w: &mut TcpStream, v: &Value) -> bool {
    let mut text = v.to_string();
    text.push('\n');
    let chunk = format!("{:x}\r\n{text}\r\n", text.len());
    w.write_all(chunk.as_bytes()).await.is_ok() && w.flush().await.is_ok()
}

fn status(code: u16, reason: &str, message: &str, details: Option<Value>) -> Value {
    let mut v = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code,
    });
    if let Some(d) = details {
        v["details"] = d;
    }
    v
}

fn internal_error() -> Reply {
    Reply::Json(
        500,
        status(
            500,
            "InternalError",
            "Internal error occurred: etcdserver: request timed out",
            None,
        ),
    )
}

fn gone(message: &str) -> Value {
    status(410, "Expired", message, None)
}

/// Where a path points: a resource collection, one object, or a subresource.
struct Target {
    res: usize,
    namespace: Option<String>,
    name: Option<String>,
    sub: Option<String>,
}

fn parse_target(path: &str, st: &State) -> Result<Target, Reply> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let (group, version, rest) = match parts.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Err(not_found(path)),
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, plural, rest @ ..] => {
            let mut v = vec![*plural];
            v.extend_from_slice(rest);
            (Some(ns.to_string()), v)
        }
        other => (None, other.to_vec()),
    };
    let Some((plural, rest)) = rest.split_first() else {
        return Err(not_found(path));
    };
    let Some(res) = RESOURCES.iter().position(|r| {
        r.group == group && r.version == version && r.plural == *plural && st.served(r)
    }) else {
        return Err(not_found(path));
    };
    Ok(Target {
        res,
        namespace,
        name: rest.first().map(|s| s.to_string()),
        sub: rest.get(1).map(|s| s.to_string()),
    })
}

fn not_found(path: &str) -> Reply {
    Reply::Json(
        404,
        status(
            404,
            "NotFound",
            "the server could not find the requested resource",
            Some(
                json!({"causes": [{"reason": "UnexpectedServerResponse", "message": format!("404 page not found: {path}")}]}),
            ),
        ),
    )
}

fn handle(req: &HttpRequest, s: &Arc<Shared>) -> Reply {
    let mut st = s.lock();
    st.requests.push(Request {
        method: req.method.clone(),
        path: req.path.clone(),
        query: req.query.clone(),
        user_agent: req.header("user-agent").map(str::to_string),
    });
    if let Some(want) = &st.token
        && req.header("authorization") != Some(want.as_str())
    {
        return Reply::Json(401, status(401, "Unauthorized", "Unauthorized", None));
    }
    if req.method == "GET"
        && let Some(v) = discovery(&req.path, &st)
    {
        return v;
    }
    if req.method == "POST" && req.path == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    {
        return access_review(req, &st);
    }
    let t = match parse_target(&req.path, &st) {
        Ok(t) => t,
        Err(reply) => return reply,
    };
    let r = RESOURCES[t.res];
    let watching = req.param("watch").is_some_and(|w| w == "true" || w == "1");
    let verb = match (req.method.as_str(), &t.name, &t.sub) {
        ("GET", None, _) if watching => "watch",
        ("GET", None, _) => "list",
        ("GET", Some(_), _) => "get",
        ("POST", _, _) => "create",
        ("PATCH", _, _) => "patch",
        ("PUT", _, _) => "update",
        ("DELETE", _, _) => "delete",
        _ => "unknown",
    };
    let plural = match &t.sub {
        Some(sub) => format!("{}/{sub}", r.plural),
        None => r.plural.to_string(),
    };
    let ns = t.namespace.clone().unwrap_or_default();
    if st.denied(verb, &plural, &ns) {
        let scope = if t.namespace.is_some() {
            format!("in the namespace \"{ns}\"")
        } else {
            "at the cluster scope".to_string()
        };
        let what = match &t.name {
            Some(n) if verb != "create" || t.sub.is_some() => format!("{plural} \"{n}\""),
            _ => plural.clone(),
        };
        let message = format!(
            "{what} is forbidden: User \"{}\" cannot {verb} resource \"{plural}\" in API group \"{}\" {scope}",
            st.user, r.group
        );
        let mut details = json!({"group": r.group, "kind": plural});
        if let Some(n) = &t.name {
            details["name"] = json!(n);
        }
        return Reply::Json(403, status(403, "Forbidden", &message, Some(details)));
    }
    if verb == "list"
        && let Some((fault, plurals)) = &st.list_fault
        && (plurals.is_empty() || plurals.contains(&plural))
    {
        return match fault {
            ListFault::InternalError => internal_error(),
            ListFault::NotJson => Reply::Text("<html><body>502 Bad Gateway</body></html>".into()),
        };
    }
    match verb {
        "watch" => watch_request(req, &t, &st),
        "list" => list(req, &t, &mut st),
        "get" => {
            let key = (t.res, ns, t.name.clone().unwrap_or_default());
            match st.objects.get(&key) {
                Some(o) => Reply::Json(200, o.clone()),
                None => object_not_found(&r, &key.2),
            }
        }
        "create" => {
            let reply = create(req, &t, &mut st);
            drop(st);
            s.notify();
            reply
        }
        "patch" => {
            let reply = patch(req, &t, &mut st);
            drop(st);
            s.notify();
            reply
        }
        "delete" => {
            let key = (t.res, ns, t.name.clone().unwrap_or_default());
            let reply = match st.remove(&key) {
                Some(o) => Reply::Json(200, o),
                None => object_not_found(&r, &key.2),
            };
            drop(st);
            s.notify();
            reply
        }
        _ => Reply::Json(
            405,
            status(405, "MethodNotAllowed", "method not allowed", None),
        ),
    }
}

/// `POST selfsubjectaccessreviews`: whether the caller may do what the review asks, by
/// the denials set with [`ApiServer::deny`] (allowed otherwise), as RBAC answers it.
fn access_review(req: &HttpRequest, st: &State) -> Reply {
    let body = match body_json(req) {
        Ok(b) => b,
        Err(e) => return e,
    };
    let attrs = &body["spec"]["resourceAttributes"];
    let verb = attrs["verb"].as_str().unwrap_or_default();
    let resource = attrs["resource"].as_str().unwrap_or_default();
    let plural = match attrs["subresource"].as_str().filter(|s| !s.is_empty()) {
        Some(sub) => format!("{resource}/{sub}"),
        None => resource.to_string(),
    };
    let denied = match attrs["namespace"].as_str().filter(|n| !n.is_empty()) {
        Some(ns) => st.denied(verb, &plural, ns),
        None => st.denied_somewhere(verb, &plural),
    };
    let mut out = body.clone();
    out["status"] = if denied {
        json!({"allowed": false, "reason": ""})
    } else {
        json!({"allowed": true, "reason": "RBAC: allowed by ClusterRoleBinding \"tester\""})
    };
    Reply::Json(201, out)
}

fn object_not_found(r: &Resource, name: &str) -> Reply {
    let what = if r.group.is_empty() {
        r.plural.to_string()
    } else {
        format!("{}.{}", r.plural, r.group)
    };
    Reply::Json(
        404,
        status(
            404,
            "NotFound",
            &format!("{what} \"{name}\" not found"),
            Some(json!({"name": name, "group": r.group, "kind": r.plural})),
        ),
    )
}

fn discovery(path: &str, st: &State) -> Option<Reply> {
    let resources = |group: &str, version: &str| -> Vec<Value> {
        RESOURCES
            .iter()
            .filter(|r| r.group == group && r.version == version && st.served(r))
            .map(|r| {
                json!({"name": r.plural, "singularName": r.kind.to_lowercase(), "namespaced": r.namespaced,
                    "kind": r.kind, "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]})
            })
            .collect()
    };
    let reply = match path.trim_end_matches('/') {
        "/version" => json!({
            "major": "1", "minor": "35", "gitVersion": st.version, "gitCommit": "0000000",
            "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.25.0",
            "compiler": "gc", "platform": "linux/amd64"
        }),
        "/api" => json!({"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}),
        "/api/v1" => {
            json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": resources("", "v1")})
        }
        "/apis" => {
            let mut groups: Vec<(&str, &str)> = RESOURCES
                .iter()
                .filter(|r| !r.group.is_empty() && st.served(r))
                .map(|r| (r.group, r.version))
                .collect();
            groups.dedup();
            let groups: Vec<Value> = groups
                .iter()
                .map(|(g, v)| {
                    let gv = json!({"groupVersion": format!("{g}/{v}"), "version": v});
                    json!({"name": g, "versions": [gv.clone()], "preferredVersion": gv})
                })
                .collect();
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        }
        p => {
            let parts: Vec<&str> = p.split('/').filter(|x| !x.is_empty()).collect();
            match parts.as_slice() {
                ["apis", g] => {
                    let r = RESOURCES.iter().find(|r| r.group == *g && st.served(r))?;
                    let gv =
                        json!({"groupVersion": format!("{g}/{}", r.version), "version": r.version});
                    json!({"kind": "APIGroup", "apiVersion": "v1", "name": g, "versions": [gv.clone()], "preferredVersion": gv})
                }
                ["apis", g, v] => {
                    let list = resources(g, v);
                    if list.is_empty() {
                        return Some(not_found(p));
                    }
                    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{g}/{v}"), "resources": list})
                }
                _ => return None,
            }
        }
    };
    Some(Reply::Json(200, reply))
}

fn list(req: &HttpRequest, t: &Target, st: &mut State) -> Reply {
    let r = RESOURCES[t.res];
    let limit: usize = req
        .param("limit")
        .and_then(|l| l.parse().ok())
        .filter(|l| *l > 0)
        .unwrap_or(usize::MAX);
    let (id, rv, items, offset) = match req.param("continue").filter(|c| !c.is_empty()) {
        Some(token) => {
            let parsed = token
                .split_once(':')
                .and_then(|(id, off)| Some((id.parse::<u64>().ok()?, off.parse::<usize>().ok()?)));
            let Some((id, off)) = parsed else {
                return Reply::Json(
                    400,
                    status(400, "BadRequest", "invalid continue token", None),
                );
            };
            match st.pages.get(&id) {
                Some((rv, items)) if *rv >= st.floor => (Some(id), *rv, items.clone(), off),
                _ => {
                    return Reply::Json(
                        410,
                        gone(
                            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                        ),
                    );
                }
            }
        }
        None => {
            let items: Vec<Value> = st
                .objects
                .iter()
                .filter(|((res, ns, _), _)| {
                    *res == t.res && t.namespace.as_ref().is_none_or(|n| n == ns)
                })
                .map(|(_, o)| {
                    // List items carry no kind or apiVersion, as kube-apiserver serves them.
                    let mut o = o.clone();
                    if let Some(m) = o.as_object_mut() {
                        m.remove("kind");
                        m.remove("apiVersion");
                    }
                    o
                })
                .collect();
            (None, st.rv, Arc::new(items), 0)
        }
    };
    let end = offset.saturating_add(limit).min(items.len());
    let page: Vec<Value> = items.get(offset..end).unwrap_or_default().to_vec();
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if end < items.len() {
        // Later pages come from the same snapshot.
        let id = id.unwrap_or_else(|| {
            st.next_page += 1;
            st.next_page
        });
        meta["continue"] = json!(format!("{id}:{end}"));
        meta["remainingItemCount"] = json!(items.len() - end);
        st.pages.insert(id, (rv, items));
    }
    Reply::Json(
        200,
        json!({"kind": format!("{}List", r.kind), "apiVersion": r.api_version(), "metadata": meta, "items": page}),
    )
}

fn watch_request(req: &HttpRequest, t: &Target, st: &State) -> Reply {
    let from = req
        .param("resourceVersion")
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    // "0" or absent means "from now" for this server (kube-rs always passes one).
    let from = if from == 0 { st.rv } else { from };
    let timeout = req
        .param("timeoutSeconds")
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(1800);
    Reply::Watch(WatchSpec {
        res: t.res,
        namespace: t.namespace.clone(),
        from,
        bookmarks: req
            .param("allowWatchBookmarks")
            .is_some_and(|b| b == "true"),
        timeout: Duration::from_secs(timeout),
    })
}

async fn stream_watch(w: &mut TcpStream, s: &Arc<Shared>, spec: WatchSpec) -> bool {
    let head =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    if w.write_all(head.as_bytes()).await.is_err() {
        return false;
    }
    let r = RESOURCES[spec.res];
    let mut changed = s.changed.subscribe();
    let deadline = tokio::time::Instant::now() + spec.timeout;
    let (gen0, every) = {
        let st = s.lock();
        (st.expire_gen, st.bookmark_every)
    };
    let mut cursor = spec.from;
    loop {
        let (events, expired, now_rv) = {
            let st = s.lock();
            let expired = st.expire_gen != gen0 || cursor + 1 < st.floor;
            let start = st.log.partition_point(|c| c.rv <= cursor);
            let events: Vec<Value> = st.log[start..]
                .iter()
                .filter(|c| {
                    c.res == spec.res && spec.namespace.as_ref().is_none_or(|n| *n == c.namespace)
                })
                .map(|c| json!({"type": c.event, "object": c.object}))
                .collect();
            (events, expired, st.rv)
        };
        if expired {
            let msg = format!("too old resource version: {cursor} ({})", s.lock().floor);
            let ok = write_chunk(w, &json!({"type": "ERROR", "object": gone(&msg)})).await;
            return ok && w.write_all(b"0\r\n\r\n").await.is_ok();
        }
        for e in &events {
            if !write_chunk(w, e).await {
                return false;
            }
        }
        cursor = now_rv;
        tokio::select! {
            _ = changed.changed() => {}
            _ = tokio::time::sleep(every), if spec.bookmarks => {
                let bm = json!({"type": "BOOKMARK", "object": {"kind": r.kind, "apiVersion": r.api_version(),
                    "metadata": {"resourceVersion": cursor.to_string()}}});
                if !write_chunk(w, &bm).await {
                    return false;
                }
            }
            _ = tokio::time::sleep_until(deadline) => {
                return w.write_all(b"0\r\n\r\n").await.is_ok();
            }
        }
    }
}

fn body_json(req: &HttpRequest) -> Result<Value, Reply> {
    serde_json::from_slice(&req.body).map_err(|e| {
        Reply::Json(
            400,
            status(400, "BadRequest", &format!("invalid JSON body: {e}"), None),
        )
    })
}

fn create(req: &HttpRequest, t: &Target, st: &mut State) -> Reply {
    let r = RESOURCES[t.res];
    let body = match body_json(req) {
        Ok(b) => b,
        Err(e) => return e,
    };
    let ns = t.namespace.clone().unwrap_or_default();
    match (r.plural, t.name.as_deref(), t.sub.as_deref()) {
        ("pods", Some(name), Some("binding")) => bind(st, t.res, &ns, name, &body),
        ("events", None, None) => {
            st.events.push(body.clone());
            Reply::Json(201, body)
        }
        (_, None, None) => {
            let name = body["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let key = (t.res, if r.namespaced { ns } else { String::new() }, name);
            if st.objects.contains_key(&key) {
                return Reply::Json(
                    409,
                    status(
                        409,
                        "AlreadyExists",
                        &format!("{} \"{}\" already exists", r.plural, key.2),
                        None,
                    ),
                );
            }
            let mut body = body;
            if r.namespaced {
                body["metadata"]["namespace"] = json!(key.1);
            }
            st.upsert(key.clone(), body);
            Reply::Json(201, st.objects[&key].clone())
        }
        _ => Reply::Json(
            405,
            status(405, "MethodNotAllowed", "method not allowed", None),
        ),
    }
}

fn bind(st: &mut State, res: usize, ns: &str, name: &str, body: &Value) -> Reply {
    let key = (res, ns.to_string(), name.to_string());
    if let Some(i) = st.races.iter().position(|(n, p, _)| n == ns && p == name)
        && let Some(mut pod) = st.objects.get(&key).cloned()
    {
        let (_, _, winner) = st.races.remove(i);
        pod["spec"]["nodeName"] = json!(winner);
        st.upsert(key.clone(), pod);
    }
    let Some(mut pod) = st.objects.get(&key).cloned() else {
        return object_not_found(&RESOURCES[res], name);
    };
    let node = body["target"]["name"].as_str().unwrap_or_default();
    if let Some(current) = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
        return Reply::Json(
            409,
            status(
                409,
                "Conflict",
                &format!(
                    "Operation cannot be fulfilled on pods/binding \"{name}\": pod {name} is already assigned to node \"{current}\""
                ),
                Some(json!({"name": name, "kind": "pods/binding"})),
            ),
        );
    }
    pod["spec"]["nodeName"] = json!(node);
    set_condition(
        &mut pod,
        json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-01-01T00:00:00Z"}),
    );
    st.upsert(key, pod);
    Reply::Json(
        201,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    )
}

/// Status conditions merge by type (the strategic-merge key).
fn set_condition(pod: &mut Value, cond: Value) {
    let list = &mut pod["status"]["conditions"];
    if !list.is_array() {
        *list = json!([]);
    }
    if let Some(a) = list.as_array_mut() {
        match a.iter_mut().find(|c| c["type"] == cond["type"]) {
            Some(c) => *c = cond,
            None => a.push(cond),
        }
    }
}

/// JSON merge patch (RFC 7386), with `status.conditions` merged by type.
fn merge(target: &mut Value, patch: &Value, path: &str) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = json!({});
            }
            for (k, v) in p {
                let child = format!("{path}.{k}");
                if v.is_null() {
                    if let Some(t) = target.as_object_mut() {
                        t.remove(k);
                    }
                } else if child == ".status.conditions" && v.is_array() {
                    let mut pod = json!({"status": {"conditions": target.get(k).cloned().unwrap_or(json!([]))}});
                    for c in v.as_array().into_iter().flatten() {
                        set_condition(&mut pod, c.clone());
                    }
                    target[k] = pod["status"]["conditions"].take();
                } else {
                    merge(&mut target[k], v, &child);
                }
            }
        }
        other => *target = other.clone(),
    }
}

fn patch(req: &HttpRequest, t: &Target, st: &mut State) -> Reply {
    let r = RESOURCES[t.res];
    let body = match body_json(req) {
        Ok(b) => b,
        Err(e) => return e,
    };
    let key = (
        t.res,
        t.namespace.clone().unwrap_or_default(),
        t.name.clone().unwrap_or_default(),
    );
    let Some(mut obj) = st.objects.get(&key).cloned() else {
        return object_not_found(&r, &key.2);
    };
    match t.sub.as_deref() {
        // The status subresource only changes status.
        Some("status") => {
            if let Some(s) = body.get("status") {
                merge(&mut obj, &json!({"status": s}), "");
            }
        }
        None => merge(&mut obj, &body, ""),
        Some(_) => {
            return Reply::Json(
                405,
                status(405, "MethodNotAllowed", "method not allowed", None),
            );
        }
    }
    st.upsert(key.clone(), obj);
    Reply::Json(200, st.objects[&key].clone())
}
