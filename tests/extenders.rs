//! Scheduler extenders against a real HTTP extender: a small HTTP/1.1 server on
//! 127.0.0.1 started by each test, answering the filter, prioritize, preempt and bind verbs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

use kubestep::cluster::{ClusterState, manifest};
use kubestep::config;
use kubestep::extender::HttpExtender;
use kubestep::framework::cycle::{CycleOutcome, Detail, SchedulingCycle};
use kubestep::framework::extender::{CallOutcome, Extender};
use kubestep::framework::{Code, PodInfo};
use kubestep::session::scheduler::Scheduler;
use kubestep::session::{LocalActuator, PodStatus, Session, SessionOptions};

// ---------- the extender server ----------

type Handler = dyn Fn(&str, &Value) -> (u16, Value) + Send + Sync;

/// An extender on 127.0.0.1: every request is recorded, the handler answers it. It
/// stops when dropped.
struct Server {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<(String, Value)>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    fn start(handler: impl Fn(&str, &Value) -> (u16, Value) + Send + Sync + 'static) -> Server {
        Server::start_with(None, handler)
    }

    /// The same over TLS.
    fn start_tls(
        tls: Arc<rustls::ServerConfig>,
        handler: impl Fn(&str, &Value) -> (u16, Value) + Send + Sync + 'static,
    ) -> Server {
        Server::start_with(Some(tls), handler)
    }

    fn start_with(
        tls: Option<Arc<rustls::ServerConfig>>,
        handler: impl Fn(&str, &Value) -> (u16, Value) + Send + Sync + 'static,
    ) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let (reqs, stopping) = (requests.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            // Bounded: a test makes a few hundred calls at most.
            for _ in 0..1000 {
                let Ok((stream, _)) = listener.accept() else {
                    break;
                };
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let (reqs, handler, tls) = (reqs.clone(), handler.clone(), tls.clone());
                std::thread::spawn(move || match tls {
                    None => serve(stream, &reqs, handler.as_ref()),
                    Some(cfg) => {
                        let Ok(conn) = rustls::ServerConnection::new(cfg) else {
                            return;
                        };
                        serve(
                            rustls::StreamOwned::new(conn, stream),
                            &reqs,
                            handler.as_ref(),
                        )
                    }
                });
            }
        });
        Server {
            addr,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    fn url(&self) -> String {
        format!("http://{}/scheduler", self.addr)
    }

    fn https_url(&self) -> String {
        format!("https://{}/scheduler", self.addr)
    }

    fn requests(&self) -> Vec<(String, Value)> {
        self.requests.lock().expect("requests").clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One request on one connection, answered with `Connection: close`.
fn serve(mut stream: impl Read + Write, reqs: &Mutex<Vec<(String, Value)>>, handler: &Handler) {
    let (path, body) = {
        let mut reader = BufReader::new(&mut stream);
        let mut line = String::new();
        if reader.read_line(&mut line).is_err() || line.is_empty() {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let mut len = 0usize;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).is_err() || h == "\r\n" || h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        (path, body)
    };
    let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    reqs.lock()
        .expect("requests")
        .push((path.clone(), value.clone()));
    let verb = path.rsplit('/').next().unwrap_or("");
    let (code, answer) = handler(verb, &value);
    let text = answer.to_string();
    let _ = write!(
        stream,
        "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = stream.flush();
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

// ---------- the cluster ----------

fn node(name: &str) -> String {
    format!(
        "apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{kubernetes.io/hostname: {name}}}
status:
  allocatable: {{cpu: \"4\", memory: 8Gi, pods: \"110\"}}
---
"
    )
}

fn pod(name: &str, cpu: &str, node: &str, priority: i32) -> String {
    let node_line = if node.is_empty() {
        String::new()
    } else {
        format!("  nodeName: {node}\n")
    };
    format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
spec:
{node_line}  priority: {priority}
  containers:
  - name: c
    image: busybox
    resources:
      requests: {{cpu: \"{cpu}\", memory: 100Mi}}
---
"
    )
}

fn cluster(docs: &str) -> ClusterState {
    let (objs, _) = manifest::parse_str(docs, "cluster.yaml").expect("manifests parse");
    ClusterState::from_objects(objs).expect("cluster")
}

/// Three empty nodes and the pending pod `default/p`.
fn three_nodes() -> ClusterState {
    cluster(&format!(
        "{}{}{}{}",
        node("n1"),
        node("n2"),
        node("n3"),
        pod("p", "1", "", 0)
    ))
}

fn configuration(extenders: &str) -> config::KubeSchedulerConfiguration {
    let text = format!(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nextenders:\n{extenders}"
    );
    config::parse_str(&text, "scheduler.yaml").expect("configuration parses")
}

fn schedule(cluster: &ClusterState, cfg: config::KubeSchedulerConfiguration) -> SchedulingCycle {
    schedule_pod(cluster, cfg, "default/p")
}

fn schedule_pod(
    cluster: &ClusterState,
    cfg: config::KubeSchedulerConfiguration,
    key: &str,
) -> SchedulingCycle {
    let mut s = Scheduler::new(cfg, cluster).expect("scheduler");
    let p = cluster.full_pod(key).expect("pod");
    s.schedule_one(Arc::new(PodInfo::new(p)), Detail::Full, &cluster.listers)
        .expect("a profile handles the pod")
}

fn outcome(c: &SchedulingCycle) -> &CycleOutcome {
    c.outcome.as_ref().expect("cycle finished")
}

fn selected(c: &SchedulingCycle) -> String {
    match outcome(c) {
        CycleOutcome::Selected { node, .. } => node.clone(),
        other => panic!("expected a node, got {other:?}"),
    }
}

fn names(v: &Value) -> Vec<String> {
    v["Nodes"]["items"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|n| n["metadata"]["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn node_objects(args: &Value, keep: &[&str]) -> Value {
    let items: Vec<Value> = args["Nodes"]["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|n| keep.contains(&n["metadata"]["name"].as_str().unwrap_or("")))
        .collect();
    json!({ "items": items })
}

// ---------- filter ----------

#[test]
fn filter_failures_enter_the_diagnosis_and_the_message() {
    let ext = Server::start(|verb, _| match verb {
        "filter" => (
            200,
            json!({
                "Nodes": {"items": []},
                "FailedNodes": {"n1": "busy", "n2": "busy"},
                "FailedAndUnresolvableNodes": {"n2": "wrong rack", "n3": "wrong rack"},
                "Error": ""
            }),
        ),
        _ => (404, Value::Null),
    });
    let cfg = configuration(&format!(
        "- urlPrefix: {}\n  filterVerb: filter\n",
        ext.url()
    ));
    let c = schedule(&three_nodes(), cfg);
    let CycleOutcome::Unschedulable { fit_error, .. } = outcome(&c) else {
        panic!("expected unschedulable, got {:?}", outcome(&c));
    };
    // n2 is in both maps: FailedAndUnresolvableNodes wins.
    let nts = &fit_error.diagnosis.node_to_status;
    assert_eq!(nts.get("n1").code(), Code::Unschedulable);
    assert_eq!(nts.get("n2").code(), Code::UnschedulableAndUnresolvable);
    assert_eq!(nts.get("n3").code(), Code::UnschedulableAndUnresolvable);
    assert!(
        fit_error
            .diagnosis
            .unschedulable_plugins
            .contains("Extender")
    );
    assert_eq!(
        fit_error.message(),
        "0/3 nodes are available: 1 busy, 2 wrong rack. no new claims to deallocate, \
         preemption: 0/3 nodes are available: \
         1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."
    );
    // The extender saw the whole nodes (it is not nodeCacheCapable).
    let reqs = ext.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].0, "/scheduler/filter");
    let mut sent = names(&reqs[0].1);
    sent.sort();
    assert_eq!(sent, ["n1", "n2", "n3"]);
    assert_eq!(reqs[0].1["NodeNames"], Value::Null);
    assert_eq!(reqs[0].1["Pod"]["metadata"]["name"], "p");
}

#[test]
fn filter_keeps_the_nodes_returned_and_skips_uninterested_pods() {
    let ext = Server::start(|verb, args| match verb {
        "filter" => (200, json!({"Nodes": node_objects(args, &["n2"])})),
        _ => (404, Value::Null),
    });
    let cfg = configuration(&format!(
        "- urlPrefix: {}\n  filterVerb: filter\n",
        ext.url()
    ));
    let c = schedule(&three_nodes(), cfg);
    assert_eq!(selected(&c), "n2");
    assert!(matches!(
        &c.extender_calls[0].outcome,
        CallOutcome::Filtered { passed, .. } if passed == &["n2".to_string()]
    ));

    // An extender managing a resource the pod does not use is never asked.
    let other = Server::start(|_, _| (200, json!({"Error": "should not be called"})));
    let cfg = configuration(&format!(
        "- urlPrefix: {}\n  filterVerb: filter\n  managedResources:\n  - name: example.com/foo\n",
        other.url()
    ));
    let c = schedule(&three_nodes(), cfg);
    assert!(matches!(outcome(&c), CycleOutcome::Selected { .. }));
    assert!(other.requests().is_empty());
}

#[test]
fn node_cache_capable_extenders_get_and_return_names() {
    let ext = Server::start(|verb, _| match verb {
        "filter" => (
            200,
            json!({"NodeNames": ["n3"], "FailedNodes": {"n1": "no"}}),
        ),
        _ => (404, Value::Null),
    });
    let cfg = configuration(&format!(
        "- urlPrefix: {}\n  filterVerb: filter\n  nodeCacheCapable: true\n",
        ext.url()
    ));
    let c = schedule(&three_nodes(), cfg);
    assert_eq!(selected(&c), "n3");
    let reqs = ext.requests();
    assert_eq!(reqs[0].1["Nodes"], Value::Null);
    let mut sent: Vec<String> = serde_json::from_value(reqs[0].1["NodeNames"].clone()).unwrap();
    sent.sort();
    assert_eq!(sent, ["n1", "n2", "n3"]);

    // A name that was not sent is an error.
    let liar = Server::start(|_, _| (200, json!({"NodeNames": ["zz"]})));
    let cfg = configuration(&format!(
        "- urlPrefix: {}\n  filterVerb: filter\n  nodeCacheCapable: true\n",
        liar.url()
    ));
    let c = schedule(&three_nodes(), cfg);
    let CycleOutcome::Error(s) = outcome(&c) else {
        panic!("expected an error, got {:?}", outcome(&c));
    };
    assert_eq!(
        s.message(),
        format!(
            "extender \"{}\" claims a filtered node \"zz\" which is not found in the input node list",
            liar.url()
        )
    );
}

#[test]
fn extender_error_field_and_status_codes_fail_the_cycle() {
    let ext = Server::start(|verb, _| match verb {
        "filter" => (200, json!({"Error": "rack database is down"})),
        _ => (500, Value::Null),
    });
    let cfg = configuration(&format!(
        "- urlPrefix: {}\n  filterVerb: filter\n",
        ext.url()
    ));
    let c = schedule(&three_nodes(), cfg);
    assert!(
        matches!(outcome(&c), CycleOutcome::Error(s) if s.message() == "rack database is down")
    );

    let cfg = configuration(&format!(
        "- urlPrefix: {}\n  filterVerb: broken\n",
        ext.url()
    ));
    let c = schedule(&three_nodes(), cfg);
    let CycleOutcome::Error(s) = outcome(&c) else {
        panic!("expected an error");
    };
    assert_eq!(
        s.message(),
        format!(
            "failed broken with extender at URL {}/broken, code 500",
            ext.url()
        )
    );
}

#[test]
fn extender_filters_make_the_search_find_all_nodes_without_scoring() {
    let ext = Server::start(|verb, args| match verb {
        "filter" => (200, json!({"NodeNames": args["NodeNames"].clone()})),
        _ => (404, Value::Null),
    });
    let text = format!(
        "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      disabled: [{{name: '*'}}]
extenders:
- urlPrefix: {}
  filterVerb: filter
  nodeCacheCapable: true
",
        ext.url()
    );
    let without = text.split("extenders:").next().unwrap_or_default();
    let cfg = config::parse_str(without, "scheduler.yaml").expect("configuration");
    // With neither score plugins nor extender filters one feasible node will do ...
    assert_eq!(schedule(&three_nodes(), cfg).feasible.len(), 1);
    // ... an extender filter makes the Filter phase find them all.
    let cfg = config::parse_str(&text, "scheduler.yaml").expect("configuration");
    let c = schedule(&three_nodes(), cfg);
    assert_eq!(c.feasible.len(), 3);
    let reqs = ext.requests();
    assert_eq!(reqs[0].1["NodeNames"].as_array().map(Vec::len), Some(3));
    let t = c.scores.as_ref().expect("scored");
    // No score plugins but an extender: totals are the extenders' (0), not 1.
    assert!(t.totals.iter().all(|&x| x == 0), "{:?}", t.totals);
}

#[test]
fn nominated_node_goes_through_extenders_first() {
    // The pod is nominated to n1, which the extender always rejects: upstream tries n1
    // alone, then searches all nodes.
    let ext = Server::start(|verb, args| match verb {
        "filter" => {
            let passed: Vec<Value> = args["NodeNames"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|n| n != "n1")
                .collect();
            (
                200,
                json!({"NodeNames": passed, "FailedNodes": {"n1": "reserved"}}),
            )
        }
        _ => (404, Value::Null),
    });
    let docs = format!(
        "{}{}{}apiVersion: v1
kind: Pod
metadata: {{name: p, namespace: default}}
spec:
  containers: [{{name: c, image: busybox}}]
status: {{nominatedNodeName: n1}}
",
        node("n1"),
        node("n2"),
        node("n3")
    );
    let cfg = configuration(&format!(
        "- urlPrefix: {}\n  filterVerb: filter\n  nodeCacheCapable: true\n",
        ext.url()
    ));
    let c = schedule(&cluster(&docs), cfg);
    assert_ne!(selected(&c), "n1");
    let reqs = ext.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].1["NodeNames"], json!(["n1"]));
    assert_eq!(reqs[1].1["NodeNames"].as_array().map(Vec::len), Some(3));
}

// ---------- unreachable extenders ----------

#[test]
fn unreachable_ignorable_extender_is_skipped() {
    let port = closed_port();
    let cfg = configuration(&format!(
        "- urlPrefix: http://127.0.0.1:{port}/x\n  filterVerb: filter\n  ignorable: true\n"
    ));
    let c = schedule(&three_nodes(), cfg);
    assert!(matches!(outcome(&c), CycleOutcome::Selected { .. }));
    let CallOutcome::Error { message, ignored } = &c.extender_calls[0].outcome else {
        panic!("expected the failed call to be recorded");
    };
    assert!(*ignored);
    assert!(message.contains("connection refused"), "{message}");
}

#[test]
fn unreachable_extender_fails_the_cycle_with_go_error_text() {
    let port = closed_port();
    let cfg = configuration(&format!(
        "- urlPrefix: http://127.0.0.1:{port}/x\n  filterVerb: filter\n"
    ));
    let c = schedule(&three_nodes(), cfg);
    let CycleOutcome::Error(s) = outcome(&c) else {
        panic!("expected an error, got {:?}", outcome(&c));
    };
    assert_eq!(
        s.message(),
        format!(
            "Post \"http://127.0.0.1:{port}/x/filter\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        )
    );
}

#[test]
fn slow_extender_times_out() {
    let ext = Server::start(|_, _| {
        std::thread::sleep(Duration::from_millis(1500));
        (200, json!({}))
    });
    let cfg = configuration(&format!(
        "- urlPrefix: {}\n  filterVerb: filter\n  httpTimeout: 200ms\n",
        ext.url()
    ));
    let c = schedule(&three_nodes(), cfg);
    let CycleOutcome::Error(s) = outcome(&c) else {
        panic!("expected an error, got {:?}", outcome(&c));
    };
    assert_eq!(
        s.message(),
        format!(
            "Post \"{}/filter\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
            ext.url()
        )
    );
}

// ---------- bounded calls ----------

/// A listener that answers one request with `answer`'s bytes, written by `answer` (it
/// may stream, drip or stall); the request is read first.
fn raw_server(answer: impl Fn(&mut TcpStream) + Send + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let addr = listener.local_addr().expect("local addr");
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut len = 0usize;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).is_err() || h == "\r\n" || h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let _ = reader.read_exact(&mut vec![0; len]);
        answer(&mut stream);
    });
    format!("http://{addr}/x")
}

fn filter_error_message(c: &SchedulingCycle) -> String {
    match outcome(c) {
        CycleOutcome::Error(s) => s.message().to_string(),
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn an_endless_answer_is_cut_at_the_cap() {
    // 80 MiB of a JSON array that never closes, then the connection stays open: it was
    // read whole (an endless stream, until memory ran out) and then waited on.
    let url = raw_server(|s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n[");
        let block = vec![b' '; 1 << 20];
        for _ in 0..80 {
            if s.write_all(&block).is_err() {
                return;
            }
        }
        std::thread::sleep(Duration::from_secs(30));
    });
    let cfg = configuration(&format!(
        "- urlPrefix: {url}\n  filterVerb: filter\n  httpTimeout: 20s\n"
    ));
    let started = std::time::Instant::now();
    let message = filter_error_message(&schedule(&three_nodes(), cfg));
    assert_eq!(
        message,
        format!(
            "the answer to filter from extender at URL {url}/filter is larger than 64 MiB \
             (the most kubestep reads of an extender's answer)"
        )
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn http_timeout_bounds_the_whole_exchange() {
    // Headers at once, then a byte every 100 ms: each read is quick, the body never ends.
    let url = raw_server(|s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n[");
        for _ in 0..300 {
            std::thread::sleep(Duration::from_millis(100));
            if s.write_all(b" ").and_then(|()| s.flush()).is_err() {
                return;
            }
        }
    });
    let cfg = configuration(&format!(
        "- urlPrefix: {url}\n  filterVerb: filter\n  httpTimeout: 1s\n"
    ));
    let started = std::time::Instant::now();
    let message = filter_error_message(&schedule(&three_nodes(), cfg));
    assert_eq!(
        message,
        "context deadline exceeded (Client.Timeout or context cancellation while reading body)"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn two_hundred_extenders_are_asked_a_few_at_a_time() {
    // Upstream asks every scoring extender at once; a thread each failed to start under
    // a memory limit (a panic) once a configuration listed a couple of hundred.
    let running = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let most = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (r, m) = (running.clone(), most.clone());
    let ext = Server::start(move |verb, args| {
        let now = r.fetch_add(1, Ordering::SeqCst) + 1;
        m.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(20));
        r.fetch_sub(1, Ordering::SeqCst);
        match verb {
            "prioritize" => {
                let list: Vec<Value> = names(args)
                    .into_iter()
                    .map(|n| json!({"Host": n, "Score": if n == "n2" { 1 } else { 0 }}))
                    .collect();
                (200, Value::Array(list))
            }
            _ => (404, Value::Null),
        }
    });
    let extenders: String = (0..200)
        .map(|i| {
            format!(
                "- urlPrefix: {}/e{i}\n  prioritizeVerb: prioritize\n  weight: 1\n",
                ext.url()
            )
        })
        .collect();
    let c = schedule(&three_nodes(), configuration(&extenders));
    assert_eq!(selected(&c), "n2");
    assert_eq!(ext.requests().len(), 200);
    let t = c.scores.as_ref().expect("scored");
    assert_eq!(t.extenders.len(), 200);
    assert!(t.extenders.iter().all(|e| e.error.is_none()));
    let most = most.load(Ordering::SeqCst);
    assert!(
        most <= kubestep::framework::cycle::MAX_CONCURRENT_CALLS,
        "{most} extenders were asked at once"
    );
}

// ---------- prioritize ----------

/// An extender that gives `node` the top score (10) and every other node 0.
fn favouring(node: &'static str) -> Server {
    Server::start(move |verb, args| match verb {
        "prioritize" => {
            let list: Vec<Value> = names(args)
                .into_iter()
                .map(|n| json!({"Host": n, "Score": if n == node { 10 } else { 0 }}))
                .collect();
            (200, Value::Array(list))
        }
        _ => (404, Value::Null),
    })
}

#[test]
fn prioritize_weights_change_the_chosen_node() {
    let a = favouring("n2");
    let b = favouring("n3");
    let run = |wa: i64, wb: i64| {
        let cfg = configuration(&format!(
            "- urlPrefix: {}\n  prioritizeVerb: prioritize\n  weight: {wa}\n\
             - urlPrefix: {}\n  prioritizeVerb: prioritize\n  weight: {wb}\n",
            a.url(),
            b.url()
        ));
        schedule(&three_nodes(), cfg)
    };
    let c = run(1, 2);
    assert_eq!(selected(&c), "n3");
    let t = c.scores.as_ref().expect("scored");
    let ext_b = t
        .extenders
        .iter()
        .find(|x| x.name == format!("extender:{}", b.url()))
        .expect("extender in the score table");
    let n3 = t
        .nodes
        .iter()
        .position(|&i| i == 2)
        .expect("n3 is feasible");
    // 10 × weight 2 × (100 / 10).
    assert_eq!(ext_b.weight, 2);
    assert_eq!(ext_b.raw[n3], 10);
    assert_eq!(ext_b.weighted[n3], 200);
    // Extender-scored nodes carry a tie-breaker.
    assert!(t.randomizers.iter().all(|&r| r != 0));

    assert_eq!(selected(&run(3, 2)), "n2");
}

#[test]
fn prioritize_errors_are_ignored_and_ties_break_the_same_way_every_time() {
    let broken = Server::start(|_, _| (500, Value::Null));
    let flat = Server::start(|verb, args| match verb {
        "prioritize" => (
            200,
            Value::Array(
                names(args)
                    .into_iter()
                    .map(|n| json!({"Host": n, "Score": 5}))
                    .collect(),
            ),
        ),
        _ => (404, Value::Null),
    });
    let cfg = || {
        configuration(&format!(
            "- urlPrefix: {}\n  prioritizeVerb: prioritize\n  weight: 1\n\
             - urlPrefix: {}\n  prioritizeVerb: prioritize\n  weight: 1\n",
            broken.url(),
            flat.url()
        ))
    };
    let first = schedule(&three_nodes(), cfg());
    let chosen = selected(&first);
    for _ in 0..3 {
        assert_eq!(selected(&schedule(&three_nodes(), cfg())), chosen);
    }
    let t = first.scores.as_ref().expect("scored");
    assert!(
        t.extenders[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("code 500"))
    );
    assert!(
        matches!(
            first.extender_calls[0].outcome,
            CallOutcome::Error { ignored: true, .. }
        ),
        "{:?}",
        first.extender_calls
    );
}

#[test]
fn returned_node_objects_are_scored_without_their_pods() {
    // n1 is busy; LeastAllocated prefers n2 while the scheduler knows about n1's pod.
    let docs = format!(
        "{}{}{}{}",
        node("n1"),
        node("n2"),
        pod("busy", "3", "n1", 0),
        pod("p", "500m", "", 0)
    );
    let c = schedule(&cluster(&docs), config::default_configuration());
    assert_eq!(selected(&c), "n2");
    // An extender that returns the node objects it was sent: upstream goes on with
    // NodeInfos built from them, which hold no pods, so both nodes look empty.
    let echo = Server::start(|verb, args| match verb {
        "filter" => (200, json!({"Nodes": node_objects(args, &["n1", "n2"])})),
        _ => (404, Value::Null),
    });
    let cfg = configuration(&format!(
        "- urlPrefix: {}\n  filterVerb: filter\n",
        echo.url()
    ));
    let c = schedule(&cluster(&docs), cfg);
    let t = c.scores.as_ref().expect("scored");
    let fit = t
        .plugins
        .iter()
        .find(|p| p.name == "NodeResourcesFit")
        .expect("NodeResourcesFit scores");
    assert_eq!(fit.raw[0], fit.raw[1], "{:?}", fit.raw);
}

// ---------- ignored resources ----------

#[test]
fn managed_resources_ignored_by_scheduler_skip_the_fit_check() {
    let docs = format!(
        "{}apiVersion: v1
kind: Pod
metadata: {{name: p, namespace: default}}
spec:
  containers:
  - name: c
    image: busybox
    resources:
      requests: {{example.com/foo: \"1\"}}
      limits: {{example.com/foo: \"1\"}}
",
        node("n1")
    );
    let c = schedule(&cluster(&docs), config::default_configuration());
    assert!(
        matches!(outcome(&c), CycleOutcome::Unschedulable { fit_error, .. }
            if fit_error.message().contains("Insufficient example.com/foo"))
    );
    let ext = Server::start(|verb, args| match verb {
        "filter" => (200, json!({"Nodes": node_objects(args, &["n1"])})),
        _ => (404, Value::Null),
    });
    let cfg = configuration(&format!(
        "- urlPrefix: {}\n  filterVerb: filter\n  managedResources:\n  - name: example.com/foo\n    ignoredByScheduler: true\n",
        ext.url()
    ));
    let c = schedule(&cluster(&docs), cfg);
    assert_eq!(selected(&c), "n1");
    assert_eq!(ext.requests().len(), 1, "the pod uses the managed resource");
}

// ---------- bind ----------

#[test]
fn binder_extender_binds() {
    let ext = Server::start(|verb, args| match verb {
        "bind" if args["Node"] == "n9" => (200, json!({"Error": "node n9 is gone"})),
        "bind" => (200, json!({})),
        _ => (404, Value::Null),
    });
    let cfg = configuration(&format!("- urlPrefix: {}\n  bindVerb: bind\n", ext.url()));
    let cl = three_nodes();
    let s = Scheduler::new(cfg, &cl).expect("scheduler");
    let p = PodInfo::new(cl.full_pod("default/p").expect("pod"));
    assert_eq!(s.extenders_binding(&p, "n2"), Some(Ok(())));
    let reqs = ext.requests();
    assert_eq!(reqs[0].0, "/scheduler/bind");
    assert_eq!(
        reqs[0].1,
        json!({"PodName": "p", "PodNamespace": "default", "PodUID": p.uid, "Node": "n2"})
    );
    let err = s.extenders_binding(&p, "n9").expect("extender bound");
    assert_eq!(err.unwrap_err().0, "node n9 is gone");

    // An ignorable binder that cannot be reached leaves binding to the Bind plugins.
    let port = closed_port();
    let cfg = configuration(&format!(
        "- urlPrefix: http://127.0.0.1:{port}\n  bindVerb: bind\n  ignorable: true\n"
    ));
    let s = Scheduler::new(cfg, &cl).expect("scheduler");
    assert_eq!(s.extenders_binding(&p, "n2"), None);
}

// ---------- preempt ----------

/// Two full nodes, each running one low-priority pod; `default/p` (priority 100) needs
/// a whole node.
fn full_nodes() -> ClusterState {
    cluster(&format!(
        "{}{}{}{}{}",
        node("n1"),
        node("n2"),
        pod("v1", "3", "n1", 0),
        pod("v2", "3", "n2", 0),
        pod("p", "2", "", 100)
    ))
}

fn nominated(c: &SchedulingCycle) -> (String, Vec<String>) {
    match outcome(c) {
        CycleOutcome::Unschedulable {
            post_filter: Some(r),
            ..
        } => (r.nominated_node_name.clone(), r.victims.clone()),
        other => panic!("expected a nomination, got {other:?}"),
    }
}

#[test]
fn preempt_extender_narrows_the_candidates() {
    let c = schedule(&full_nodes(), config::default_configuration());
    assert_eq!(
        nominated(&c).0,
        "n1",
        "without extenders the first candidate wins"
    );

    // A nodeCacheCapable extender gets victims by UID and keeps only n2.
    let ext = Server::start(|verb, args| match verb {
        "preempt" => {
            let n2 = args["NodeNameToMetaVictims"]["n2"].clone();
            (200, json!({"NodeNameToMetaVictims": {"n2": n2}}))
        }
        _ => (404, Value::Null),
    });
    let cfg = configuration(&format!(
        "- urlPrefix: {}\n  preemptVerb: preempt\n  nodeCacheCapable: true\n",
        ext.url()
    ));
    let cl = full_nodes();
    let c = schedule(&cl, cfg);
    assert_eq!(
        nominated(&c),
        ("n2".to_string(), vec!["default/v2".to_string()])
    );
    let reqs = ext.requests();
    assert_eq!(reqs.len(), 1);
    let args = &reqs[0].1;
    assert_eq!(args["NodeNameToVictims"], Value::Null);
    let v2_uid = cl.pod("default/v2").unwrap().metadata.uid.clone().unwrap();
    assert_eq!(
        args["NodeNameToMetaVictims"]["n2"],
        json!({"Pods": [{"UID": v2_uid}], "NumPDBViolations": 0})
    );
}

#[test]
fn preempt_extender_gets_pods_and_bad_answers_are_errors() {
    // Not nodeCacheCapable: whole victim pods go out.
    let ext = Server::start(|verb, args| match verb {
        "preempt" => {
            let uid = args["NodeNameToVictims"]["n1"]["Pods"][0]["metadata"]["uid"].clone();
            (
                200,
                json!({"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": uid}], "NumPDBViolations": 0}}}),
            )
        }
        _ => (404, Value::Null),
    });
    let cfg = configuration(&format!(
        "- urlPrefix: {}\n  preemptVerb: preempt\n",
        ext.url()
    ));
    let c = schedule(&full_nodes(), cfg);
    assert_eq!(nominated(&c).0, "n1");
    let args = &ext.requests()[0].1;
    assert_eq!(args["NodeNameToMetaVictims"], Value::Null);
    assert_eq!(
        args["NodeNameToVictims"]["n2"]["Pods"][0]["metadata"]["name"],
        "v2"
    );

    // Keeping a node without victims is an error for a required extender.
    let empty = Server::start(|_, _| (200, json!({"NodeNameToMetaVictims": {"n1": {"Pods": []}}})));
    let cfg = configuration(&format!(
        "- urlPrefix: {}\n  preemptVerb: preempt\n",
        empty.url()
    ));
    let c = schedule(&full_nodes(), cfg);
    let CycleOutcome::Unschedulable { status, .. } = outcome(&c) else {
        panic!("expected unschedulable");
    };
    assert_eq!(status.code(), Code::Error);
    assert!(
        status
            .message()
            .contains("expected at least one victim pod on node \"n1\""),
        "{}",
        status.message()
    );
}

// ---------- HTTPS ----------

fn tls_data(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/extender")
        .join(name)
        .display()
        .to_string()
}

/// The test server's TLS settings; with `client_ca`, clients must show a certificate
/// signed by the test CA.
fn server_tls(client_ca: bool) -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(tls_data("server.pem"))
        .expect("server.pem")
        .collect::<Result<_, _>>()
        .expect("certificates");
    let key = PrivateKeyDer::from_pem_file(tls_data("server-key.pem")).expect("server key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("protocol versions");
    let cfg = if client_ca {
        let mut roots = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_file_iter(tls_data("ca.pem")).expect("ca.pem") {
            roots.add(c.expect("ca")).expect("add ca");
        }
        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .expect("client verifier");
        builder
            .with_client_cert_verifier(verifier)
            .with_single_cert(certs, key)
    } else {
        builder.with_no_client_auth().with_single_cert(certs, key)
    };
    Arc::new(cfg.expect("server TLS config"))
}

fn pass_all(verb: &str, args: &Value) -> (u16, Value) {
    match verb {
        "filter" => (
            200,
            json!({"Nodes": node_objects(args, &["n1", "n2", "n3"])}),
        ),
        _ => (404, Value::Null),
    }
}

fn filter_error(c: &SchedulingCycle) -> Option<String> {
    match outcome(c) {
        CycleOutcome::Error(s) => Some(s.message()),
        _ => None,
    }
}

#[test]
fn https_extender_with_ca_or_without_verification() {
    let ext = Server::start_tls(server_tls(false), pass_all);
    // The test CA verifies the server.
    let cfg = configuration(&format!(
        "- urlPrefix: {}\n  filterVerb: filter\n  enableHTTPS: true\n  tlsConfig:\n    caFile: {}\n",
        ext.https_url(),
        tls_data("ca.pem")
    ));
    let c = schedule(&three_nodes(), cfg);
    assert_eq!(filter_error(&c), None);
    // enableHTTPS without a CA does not verify the server at all.
    let cfg = configuration(&format!(
        "- urlPrefix: {}\n  filterVerb: filter\n  enableHTTPS: true\n",
        ext.https_url()
    ));
    assert_eq!(filter_error(&schedule(&three_nodes(), cfg)), None);
    // Without either, the public roots do not know the test CA.
    let cfg = configuration(&format!(
        "- urlPrefix: {}\n  filterVerb: filter\n",
        ext.https_url()
    ));
    let err = filter_error(&schedule(&three_nodes(), cfg)).expect("untrusted server");
    assert_eq!(
        err,
        format!(
            "Post \"{}/filter\": tls: failed to verify certificate: x509: certificate signed by unknown authority",
            ext.https_url()
        )
    );
    assert_eq!(ext.requests().len(), 2);
}

#[test]
fn https_extender_requiring_a_client_certificate() {
    let ext = Server::start_tls(server_tls(true), pass_all);
    let cfg = configuration(&format!(
        "- urlPrefix: {}\n  filterVerb: filter\n  tlsConfig:\n    caFile: {}\n    certFile: {}\n    keyFile: {}\n",
        ext.https_url(),
        tls_data("ca.pem"),
        tls_data("client.pem"),
        tls_data("client-key.pem")
    ));
    assert_eq!(filter_error(&schedule(&three_nodes(), cfg)), None);
    let cfg = configuration(&format!(
        "- urlPrefix: {}\n  filterVerb: filter\n  tlsConfig:\n    caFile: {}\n",
        ext.https_url(),
        tls_data("ca.pem")
    ));
    assert!(filter_error(&schedule(&three_nodes(), cfg)).is_some());
    assert_eq!(ext.requests().len(), 1);
}

#[test]
fn unusable_tls_settings_fail_scheduler_setup() {
    let cfg = configuration(
        "- urlPrefix: https://127.0.0.1:1\n  filterVerb: filter\n  tlsConfig:\n    insecure: true\n    caData: aGVsbG8=\n",
    );
    let err = Scheduler::new(cfg, &three_nodes())
        .err()
        .expect("setup fails")
        .to_string();
    assert_eq!(
        err,
        "scheduler.yaml: couldn't build extenders: specifying a root certificates file with the insecure flag is not allowed"
    );
}

// ---------- the extender type on its own ----------

#[test]
fn extender_built_from_config_reports_its_capabilities() {
    let cfg = configuration(
        "- urlPrefix: http://127.0.0.1:1/a\n  filterVerb: f\n  prioritizeVerb: p\n  weight: 2\n  preemptVerb: x\n  bindVerb: b\n  ignorable: true\n",
    );
    let e = HttpExtender::new(&cfg.extenders[0]).expect("extender");
    assert_eq!(e.name(), "extender:http://127.0.0.1:1/a");
    assert!(e.is_filter() && e.is_prioritizer() && e.supports_preemption() && e.is_binder());
    assert!(e.is_ignorable());
}

// ---------- kubestep explain ----------

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kubestep-ext-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// Runs `kubestep explain` on three nodes and `default/p` with these extenders.
fn explain(tag: &str, extenders: &str, output: &str) -> (Option<i32>, String) {
    let dir = temp_dir(tag);
    let cluster_file = dir.join("cluster.yaml");
    std::fs::write(
        &cluster_file,
        format!(
            "{}{}{}{}",
            node("n1"),
            node("n2"),
            node("n3"),
            pod("p", "1", "", 0)
        ),
    )
    .expect("write cluster");
    let config_file = dir.join("scheduler.yaml");
    std::fs::write(
        &config_file,
        format!(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nextenders:\n{extenders}"
        ),
    )
    .expect("write config");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kubestep"))
        .args(["explain", "--cluster"])
        .arg(&cluster_file)
        .arg("--config")
        .arg(&config_file)
        .args(["--pod", "default/p", "-o", output])
        .output()
        .expect("kubestep runs");
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.code() != Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

#[test]
fn explain_text_names_nodes_an_extender_left_out() {
    let ext = Server::start(|verb, args| match verb {
        "filter" => (
            200,
            json!({"Nodes": node_objects(args, &["n2"]), "FailedNodes": {"n1": "cold aisle"}}),
        ),
        _ => (404, Value::Null),
    });
    let broken = Server::start(|_, _| (503, Value::Null));
    let (code, out) = explain(
        "text",
        &format!(
            "- urlPrefix: {}\n  filterVerb: filter\n- urlPrefix: {}\n  filterVerb: filter\n  ignorable: true\n",
            ext.url(),
            broken.url()
        ),
        "text",
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(out.starts_with("kube-scheduler v1.36 semantics"), "{out}");
    assert!(out.contains("\n\ndefault/p: schedulable on n2"), "{out}");
    let row = |n: &str| {
        out.lines()
            .find(|l| l.starts_with(n))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        row("n1").contains(&format!("extender:{}", ext.url())),
        "{out}"
    );
    assert!(row("n1").contains("cold aisle"), "{out}");
    assert!(
        row("n3").contains("left out of the extender's answer"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "extender:{} filter ignored: failed filter with extender at URL {}/filter, code 503",
            broken.url(),
            broken.url()
        )),
        "{out}"
    );
}

#[test]
fn explain_with_config_shows_extenders_in_json() {
    let filter = Server::start(|verb, args| match verb {
        "filter" => (
            200,
            json!({"Nodes": node_objects(args, &["n1", "n2"]), "FailedNodes": {"n3": "no GPU left"}}),
        ),
        _ => (404, Value::Null),
    });
    let scorer = favouring("n1");
    let (code, out) = explain(
        "json",
        &format!(
            "- urlPrefix: {}\n  filterVerb: filter\n- urlPrefix: {}\n  prioritizeVerb: prioritize\n  weight: 4\n",
            filter.url(),
            scorer.url()
        ),
        "json",
    );
    assert_eq!(code, Some(0), "{out}");
    let v: Value = serde_json::from_str(&out).expect("json output");
    assert_eq!(v["bound"], "n1");
    let fname = format!("extender:{}", filter.url());
    let sname = format!("extender:{}", scorer.url());
    assert_eq!(v["filter"]["n3"]["plugin"], fname.as_str());
    assert_eq!(v["filter"]["n3"]["reasons"], json!(["no GPU left"]));
    assert_eq!(v["scores"]["n1"]["plugins"][&sname], 400);
    assert_eq!(v["scores"]["n1"]["raw"][&sname], 10);
    assert_eq!(v["scores"]["n2"]["plugins"][&sname], 0);
    // The filtering extender scores nothing but still counts, with weight 0.
    assert_eq!(v["scores"]["n1"]["plugins"][&fname], 0);
    assert_eq!(v["weights"][&sname], 4);
    let calls = v["extenders"].as_array().expect("extender calls");
    assert_eq!(calls[0]["extender"], fname.as_str());
    assert_eq!(calls[0]["verb"], "filter");
    assert_eq!(calls[0]["outcome"]["result"], "filtered");
    assert_eq!(calls[0]["outcome"]["failed"]["n3"], "no GPU left");
    assert!(
        calls
            .iter()
            .any(|c| c["extender"] == sname.as_str() && c["outcome"]["result"] == "prioritized")
    );
}

// ---------- in a running session ----------

fn session_over(cl: ClusterState, cfg: config::KubeSchedulerConfiguration) -> Session {
    Session::new(cl, cfg, SessionOptions::default(), Box::new(LocalActuator)).expect("session")
}

#[test]
fn a_session_filters_prioritizes_and_binds_through_extenders() {
    // Filter keeps n2 and n3, prioritize prefers n3, bind accepts everything.
    let ext = Server::start(|verb, _| match verb {
        "filter" => (
            200,
            json!({"NodeNames": ["n2", "n3"], "FailedNodes": {"n1": "no GPU driver"}}),
        ),
        "prioritize" => (
            200,
            json!([{"Host": "n2", "Score": 1}, {"Host": "n3", "Score": 9}]),
        ),
        "bind" => (200, json!({})),
        _ => (404, Value::Null),
    });
    let cfg = configuration(&format!(
        "- urlPrefix: {}\n  filterVerb: filter\n  prioritizeVerb: prioritize\n  bindVerb: bind\n  weight: 5\n  nodeCacheCapable: true\n",
        ext.url()
    ));
    let mut s = session_over(three_nodes(), cfg);
    s.continue_();
    let r = s.pod("default/p").expect("pod");
    assert_eq!(r.status, PodStatus::Bound);
    assert_eq!(r.node.as_deref(), Some("n3"));
    let bind = s
        .history
        .steps
        .iter()
        .find(|st| st.point.as_str() == "Bind")
        .expect("a Bind step");
    assert_eq!(
        bind.plugin.as_deref(),
        Some(format!("extender:{}", ext.url()).as_str())
    );
    let verbs: Vec<String> = ext.requests().into_iter().map(|(p, _)| p).collect();
    assert_eq!(
        verbs,
        [
            "/scheduler/filter",
            "/scheduler/prioritize",
            "/scheduler/bind"
        ]
    );
}

#[test]
fn a_failed_extender_bind_unreserves_and_requeues() {
    let ext = Server::start(|verb, _| match verb {
        "bind" => (200, json!({"Error": "binding refused by the extender"})),
        _ => (404, Value::Null),
    });
    let cfg = configuration(&format!("- urlPrefix: {}\n  bindVerb: bind\n", ext.url()));
    let mut s = session_over(three_nodes(), cfg);
    s.continue_();
    let r = s.pod("default/p").expect("pod");
    assert_ne!(r.status, PodStatus::Bound);
    assert!(
        r.message
            .as_deref()
            .unwrap_or("")
            .contains("binding refused by the extender"),
        "{r:?}"
    );
    assert!(
        s.history
            .steps
            .iter()
            .any(|st| st.point.as_str() == "Unreserve")
    );
    // Nothing stays assumed.
    for n in ["n1", "n2", "n3"] {
        assert_eq!(s.snapshot().get(n).unwrap().requested.milli_cpu, 0);
    }
}

#[test]
fn an_unreachable_ignorable_extender_does_not_stop_the_session() {
    let port = closed_port();
    let cfg = configuration(&format!(
        "- urlPrefix: http://127.0.0.1:{port}\n  filterVerb: filter\n  prioritizeVerb: prioritize\n  weight: 1\n  bindVerb: bind\n  ignorable: true\n"
    ));
    let mut s = session_over(three_nodes(), cfg);
    s.continue_();
    assert_eq!(s.pod("default/p").expect("pod").status, PodStatus::Bound);
}
