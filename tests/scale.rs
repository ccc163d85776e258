//! `kubestep record` and `kubestep live --headless` against a large generated cluster
//! (tests/support/paged.rs): every pod and node arrives, exactly once, through lists
//! paged 500 at a time with well-formed URLs. CI records the full 150,000-pod,
//! 5,000-node cluster (about 5 s, under 100 MB) and runs live mode on 30,000 pods (live
//! mode holds the whole cluster: about 1 GB at full size). To measure both at full size,
//! timed with /usr/bin/time -v when it is there:
//! `KUBESTEP_SCALE_TIMED=1 cargo test --release --test scale -- --nocapture --test-threads 1`.

#[path = "support/paged.rs"]
mod paged;
#[path = "support/process.rs"]
mod process;

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use kubestep::recording::EventType;
use kubestep::recording::reader::{ReadOptions, read_file};
use paged::{PagedServer, Size};
use process::wait_bounded;

const PAGE: usize = 500;

const CI: Size = Size {
    nodes: 1_000,
    pods: 30_000,
    pending: 20,
    namespaces: 50,
};

const FULL: Size = Size {
    nodes: 5_000,
    pods: 150_000,
    pending: 20,
    namespaces: 50,
};

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kubestep-scale-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// kubestep with `args`; under `/usr/bin/time -v` when `timed` and it exists.
fn kubestep(args: &[&str], kubeconfig: &Path, timed: bool) -> Child {
    let time = Path::new("/usr/bin/time");
    let mut c = if timed && time.exists() {
        let mut c = Command::new(time);
        c.arg("-v").arg(env!("CARGO_BIN_EXE_kubestep"));
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_kubestep"))
    };
    c.args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env_remove("KUBECONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kubestep")
}

/// Reads standard error until a line starting with `until`; returns the lines so far
/// and the rest of the stream (read on another thread, so the child never blocks).
fn stderr_until(
    child: &mut Child,
    until: &str,
) -> (Vec<String>, std::thread::JoinHandle<Vec<String>>) {
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.expect("read stderr");
        let done = line.starts_with(until);
        seen.push(line);
        if done {
            break;
        }
    }
    let rest = std::thread::spawn(move || lines.map_while(Result::ok).collect());
    (seen, rest)
}

/// SIGINT to kubestep: the child, or under /usr/bin/time (which ignores SIGINT) its child.
fn interrupt(child: &Child) {
    let id = child.id();
    let children =
        std::fs::read_to_string(format!("/proc/{id}/task/{id}/children")).unwrap_or_default();
    let mut pids: Vec<String> = children.split_whitespace().map(str::to_string).collect();
    if pids.is_empty() {
        pids.push(id.to_string());
    }
    for pid in pids {
        let _ = Command::new("kill").args(["-INT", &pid]).status();
    }
}

/// Stops kubestep as Ctrl-C does and collects what it printed: its exit, every stderr
/// line (those `stderr_until` read included), and stdout.
fn stop(
    child: Child,
    seen: Vec<String>,
    rest: std::thread::JoinHandle<Vec<String>>,
) -> (Output, Vec<String>, String) {
    interrupt(&child);
    let o = wait_bounded(child, Duration::from_secs(120));
    let mut stderr = seen;
    stderr.extend(rest.join().unwrap_or_default());
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    (o, stderr, stdout)
}

/// What /usr/bin/time -v said: wall time and peak RSS.
fn time_report(stderr: &[String]) -> String {
    let pick = |key: &str| {
        stderr
            .iter()
            .find_map(|l| l.trim().strip_prefix(key).map(str::trim))
            .unwrap_or("?")
            .to_string()
    };
    format!(
        "wall {}, peak RSS {} kB",
        pick("Elapsed (wall clock) time (h:mm:ss or m:ss):"),
        pick("Maximum resident set size (kbytes):")
    )
}

/// Every list of `path` was paged with `limit=500`, in well-formed URLs, following each
/// `continue` the server gave; returns the number of pages.
fn check_paging(server: &PagedServer, path: &str, total: usize) -> usize {
    let lists: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path == path && !r.is_watch())
        .collect();
    let pages = total.div_ceil(PAGE).max(1);
    assert_eq!(lists.len(), pages, "lists of {path}: {lists:?}");
    for (i, r) in lists.iter().enumerate() {
        assert!(
            !r.query.starts_with('&') && !r.query.contains("&&"),
            "malformed query: {path}?{}",
            r.query
        );
        assert_eq!(r.param("limit"), Some("500"), "{path}?{}", r.query);
        let token = (i > 0).then(|| format!("at-{}", i * PAGE));
        assert_eq!(r.param("continue"), token.as_deref(), "{path}?{}", r.query);
    }
    for r in server.requests().iter().filter(|r| r.is_watch()) {
        assert!(
            !r.query.starts_with('&') && !r.query.contains("&&"),
            "malformed query: {}?{}",
            r.path,
            r.query
        );
    }
    pages
}

fn record(size: Size, timed: bool) {
    let server = PagedServer::start(size);
    let dir = temp_dir(if timed { "record-full" } else { "record" });
    let kc = server.write_kubeconfig(&dir);
    let out = dir.join("rec.jsonl.gz");
    let began = Instant::now();
    let mut child = kubestep(&["record", "-o", out.to_str().unwrap()], &kc, timed);
    let (seen, rest) = stderr_until(&mut child, "initial sync done");
    let synced = began.elapsed();
    let (o, stderr, stdout) = stop(child, seen, rest);
    assert!(o.status.success(), "{}\n{stdout}", stderr.join("\n"));
    let objects = size.pods + size.nodes + size.namespaces;
    assert!(
        stderr
            .iter()
            .any(|l| l.starts_with(&format!("initial sync done: {objects} objects"))),
        "{}",
        stderr.join("\n")
    );

    // Every pod and node once, nothing else but the namespaces.
    let rec = read_file(&out, ReadOptions { strict: true }).expect("the recording reads");
    let mut pods = HashSet::new();
    let mut nodes = HashSet::new();
    for e in &rec.events {
        assert_eq!(e.kind, EventType::Added);
        match e.object.kind() {
            "Pod" => assert!(pods.insert(e.object.key()), "{} twice", e.object.key()),
            "Node" => assert!(nodes.insert(e.object.key()), "{} twice", e.object.key()),
            "Namespace" => {}
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(pods.len(), size.pods);
    assert_eq!(nodes.len(), size.nodes);
    assert!(pods.contains(&format!("ns-000/{}", paged::pod_name(0))));
    assert!(nodes.contains(&paged::node_name(size.nodes - 1)));

    let pod_pages = check_paging(&server, "/api/v1/pods", size.pods);
    let node_pages = check_paging(&server, "/api/v1/nodes", size.nodes);
    check_paging(&server, "/api/v1/services", 0);

    // The summary says what is on disk: the gzip file's size, beside the JSON it holds.
    let on_disk = std::fs::metadata(&out).expect("the recording").len();
    let shown = format!("{:.1} MiB on disk (", on_disk as f64 / (1u64 << 20) as f64);
    assert!(stdout.contains(&shown), "{shown} in {stdout}");
    eprintln!(
        "record: {} pods, {} nodes; pages: {pod_pages} of pods, {node_pages} of nodes; initial sync {:.1}s; {}; {}",
        size.pods,
        size.nodes,
        synced.as_secs_f64(),
        stdout.lines().next().unwrap_or_default(),
        if timed {
            time_report(&stderr)
        } else {
            String::new()
        }
    );
    std::fs::remove_dir_all(&dir).ok();
}

fn live(size: Size, timed: bool) {
    let server = PagedServer::start(size);
    let dir = temp_dir(if timed { "live-full" } else { "live" });
    let kc = server.write_kubeconfig(&dir);
    let began = Instant::now();
    let mut child = kubestep(&["live", "--headless"], &kc, timed);
    let (seen, rest) = stderr_until(&mut child, "mirrored ");
    let synced = began.elapsed();
    // Let it schedule the pending pods, then quit as Ctrl-C does.
    std::thread::sleep(Duration::from_secs(2));
    let (o, stderr, stdout) = stop(child, seen, rest);
    assert!(o.status.success(), "{}", stderr.join("\n"));
    let has = |line: String| {
        assert!(stderr.contains(&line), "{line} in {}", stderr.join("\n"));
    };
    has(format!("listed Pod: {} objects", size.pods));
    has(format!("listed Node: {} objects", size.nodes));
    has(format!(
        "mirrored {} objects",
        size.pods + size.nodes + size.namespaces
    ));
    // Shadow mode explains each pending pod: it fits, on some node.
    let last = stdout.lines().last().unwrap_or_default();
    let summary: serde_json::Value = serde_json::from_str(last).expect("the summary");
    // Streamed a pod at a time, it is still the line the summary's JSON value makes.
    assert_eq!(last, summary.to_string());
    let pending: Vec<_> = summary["summary"]["pods"]
        .as_array()
        .expect("summary pods")
        .iter()
        .filter(|p| p["status"] == "Pending")
        .collect();
    assert_eq!(pending.len(), size.pending, "{summary}");
    assert!(
        pending.iter().all(|p| p["selected"].as_array().is_some()),
        "{pending:?}"
    );
    let pod_pages = check_paging(&server, "/api/v1/pods", size.pods);
    eprintln!(
        "live --headless: {} pods, {} nodes; {pod_pages} pages of pods; mirrored after {:.1}s; {}",
        size.pods,
        size.nodes,
        synced.as_secs_f64(),
        if timed {
            time_report(&stderr)
        } else {
            String::new()
        }
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Asked for by hand: full size for live too, and each run timed.
fn timed() -> bool {
    std::env::var_os("KUBESTEP_SCALE_TIMED").is_some()
}

#[test]
fn record_lists_a_150k_pod_cluster_in_pages() {
    record(FULL, timed());
}

#[test]
fn live_lists_a_large_cluster_in_pages() {
    live(if timed() { FULL } else { CI }, timed());
}
