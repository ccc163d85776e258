//! A loopback API server for scale: it serves a generated cluster of any size (nodes,
//! pods, the namespaces they use) without storing it. Objects are made from their index
//! when a page asks for them, so 150,000 pods cost the test nothing until listed, and
//! the client under test is the only thing that holds them.
//!
//! Lists honour `limit` and `continue` (the token is the next index, opaque to the client)
//! and every request is logged, so a test can check how the cluster was paged. Watches
//! are held open with nothing to say until `timeoutSeconds`. Plain threads and blocking
//! sockets: one thread per connection, enough for the ~15 a client opens.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The generated cluster's size.
#[derive(Debug, Clone, Copy)]
pub struct Size {
    pub nodes: usize,
    pub pods: usize,
    /// The last `pending` pods have no node.
    pub pending: usize,
    pub namespaces: usize,
}

/// One request as received: `path` and `query` (without `?`).
#[derive(Debug, Clone)]
pub struct Logged {
    pub path: String,
    pub query: String,
}

impl Logged {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.split('&').find_map(|p| {
            p.split_once('=')
                .filter(|(k, _)| *k == name)
                .map(|(_, v)| v)
        })
    }
    pub fn is_watch(&self) -> bool {
        self.param("watch").is_some()
    }
}

pub struct PagedServer {
    pub addr: SocketAddr,
    log: Arc<Mutex<Vec<Logged>>>,
}

/// The resourceVersion of every list: nothing changes.
const RV: &str = "1000";

/// Every collection kubestep lists, by path: (kind, plural). Only nodes, pods and
/// namespaces have objects.
const COLLECTIONS: &[(&str, &str)] = &[
    ("/api/v1/nodes", "Node"),
    ("/api/v1/pods", "Pod"),
    ("/api/v1/namespaces", "Namespace"),
    ("/api/v1/persistentvolumes", "PersistentVolume"),
    ("/api/v1/persistentvolumeclaims", "PersistentVolumeClaim"),
    ("/api/v1/services", "Service"),
    ("/api/v1/replicationcontrollers", "ReplicationController"),
    ("/apis/apps/v1/replicasets", "ReplicaSet"),
    ("/apis/apps/v1/statefulsets", "StatefulSet"),
    ("/apis/storage.k8s.io/v1/storageclasses", "StorageClass"),
    ("/apis/storage.k8s.io/v1/csinodes", "CSINode"),
    (
        "/apis/policy/v1/poddisruptionbudgets",
        "PodDisruptionBudget",
    ),
    (
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        "PriorityClass",
    ),
];

impl PagedServer {
    pub fn start(size: Size) -> PagedServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = log.clone();
        std::thread::spawn(move || {
            for sock in listener.incoming().flatten() {
                let l = l.clone();
                std::thread::spawn(move || serve(sock, size, &l));
            }
        });
        PagedServer { addr, log }
    }

    pub fn requests(&self) -> Vec<Logged> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn write_kubeconfig(&self, dir: &std::path::Path) -> std::path::PathBuf {
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: paged\n  cluster:\n    server: http://{}\ncontexts:\n- name: paged\n  context:\n    cluster: paged\n    user: tester\ncurrent-context: paged\nusers:\n- name: tester\n  user: {{}}\n",
            self.addr
        );
        let path = dir.join("kubeconfig");
        std::fs::write(&path, text).expect("write kubeconfig");
        path
    }
}

pub fn node_name(i: usize) -> String {
    format!("node-{i:05}")
}

pub fn pod_name(i: usize) -> String {
    format!("pod-{i:06}")
}

fn namespace(size: &Size, i: usize) -> String {
    format!("ns-{:03}", i % size.namespaces)
}

fn node_json(i: usize, out: &mut String) {
    let n = node_name(i);
    out.push_str(&format!(
        r#"{{"metadata":{{"name":"{n}","uid":"node-uid-{i}","resourceVersion":"{RV}","creationTimestamp":"2026-01-01T00:00:00Z","labels":{{"kubernetes.io/hostname":"{n}","topology.kubernetes.io/zone":"zone-{}"}}}},"spec":{{}},"status":{{"allocatable":{{"cpu":"64","memory":"256Gi","pods":"110"}},"capacity":{{"cpu":"64","memory":"256Gi","pods":"110"}},"conditions":[{{"type":"Ready","status":"True"}}]}}}}"#,
        i % 3
    ));
}

fn pod_json(size: &Size, i: usize, out: &mut String) {
    let ns = namespace(size, i);
    let bound = i < size.pods - size.pending;
    let (node, phase) = if bound {
        (
            format!(r#""nodeName":"{}","#, node_name(i % size.nodes)),
            "Running",
        )
    } else {
        (String::new(), "Pending")
    };
    out.push_str(&format!(
        r#"{{"metadata":{{"name":"{}","namespace":"{ns}","uid":"pod-uid-{i}","resourceVersion":"{RV}","creationTimestamp":"2026-01-01T00:00:00Z","labels":{{"app":"app-{}"}}}},"spec":{{{node}"schedulerName":"default-scheduler","containers":[{{"name":"c","image":"registry.example/app:1","resources":{{"requests":{{"cpu":"10m","memory":"16Mi"}}}}}}]}},"status":{{"phase":"{phase}"}}}}"#,
        pod_name(i),
        i % 100
    ));
}

fn namespace_json(i: usize, out: &mut String) {
    out.push_str(&format!(
        r#"{{"metadata":{{"name":"ns-{i:03}","uid":"ns-uid-{i}","resourceVersion":"{RV}"}},"status":{{"phase":"Active"}}}}"#
    ));
}

fn serve(sock: TcpStream, size: Size, log: &Mutex<Vec<Logged>>) {
    let Ok(read_half) = sock.try_clone() else {
        return;
    };
    let mut r = BufReader::new(read_half);
    let mut w = sock;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let target = line.split_whitespace().nth(1).unwrap_or("/").to_string();
        let mut length = 0usize;
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let (path, query) = match target.split_once('?') {
            Some((p, q)) => (p.to_string(), q.to_string()),
            None => (target.clone(), String::new()),
        };
        let req = Logged { path, query };
        log.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(req.clone());
        let ok = if req.is_watch() {
            hold_watch(&mut w, &req)
        } else {
            let (code, text) = answer(&size, &req);
            let head = format!(
                "HTTP/1.1 {code} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                if code == 200 { "OK" } else { "Not Found" },
                text.len()
            );
            w.write_all(head.as_bytes()).is_ok() && w.write_all(text.as_bytes()).is_ok()
        };
        if !ok {
            return;
        }
    }
}

/// A watch with nothing to report: open until its timeout or until the client leaves.
fn hold_watch(w: &mut TcpStream, req: &Logged) -> bool {
    let head =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    if w.write_all(head.as_bytes()).is_err() || w.flush().is_err() {
        return false;
    }
    let timeout = Duration::from_secs(
        req.param("timeoutSeconds")
            .and_then(|t| t.parse().ok())
            .unwrap_or(50),
    );
    let opened = Instant::now();
    let _ = w.set_read_timeout(Some(Duration::from_millis(200)));
    let mut probe = [0u8; 1];
    while opened.elapsed() < timeout {
        // The client sends nothing on a watch: a read that returns is its leaving.
        match w.read(&mut probe) {
            Ok(_) => return false,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return false,
        }
    }
    let _ = w.set_read_timeout(None);
    w.write_all(b"0\r\n\r\n").is_ok()
}

fn not_found() -> (u16, String) {
    (
        404,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","code":404}"#.into(),
    )
}

fn answer(size: &Size, req: &Logged) -> (u16, String) {
    if req.path == "/version" {
        return (
            200,
            r#"{"major":"1","minor":"35","gitVersion":"v1.35.4","gitCommit":"0000000","gitTreeState":"clean","buildDate":"2026-01-01T00:00:00Z","goVersion":"go1.25.0","compiler":"gc","platform":"linux/amd64"}"#.into(),
        );
    }
    let Some(&(_, kind)) = COLLECTIONS.iter().find(|(p, _)| *p == req.path) else {
        return not_found();
    };
    let total = match kind {
        "Node" => size.nodes,
        "Pod" => size.pods,
        "Namespace" => size.namespaces,
        _ => 0,
    };
    let from: usize = req
        .param("continue")
        .and_then(|c| c.strip_prefix("at-"))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let limit = req
        .param("limit")
        .and_then(|l| l.parse().ok())
        .filter(|l: &usize| *l > 0)
        .unwrap_or(usize::MAX);
    let to = from.saturating_add(limit).min(total);
    let mut out = String::with_capacity((to - from.min(to)) * 400 + 200);
    out.push_str(&format!(
        r#"{{"kind":"{kind}List","apiVersion":"v1","metadata":{{"resourceVersion":"{RV}""#
    ));
    if to < total {
        out.push_str(&format!(
            r#","continue":"at-{to}","remainingItemCount":{}"#,
            total - to
        ));
    }
    out.push_str(r#"},"items":["#);
    for i in from..to {
        if i > from {
            out.push(',');
        }
        match kind {
            "Node" => node_json(i, &mut out),
            "Pod" => pod_json(size, i, &mut out),
            _ => namespace_json(i, &mut out),
        }
    }
    out.push_str("]}");
    (200, out)
}
