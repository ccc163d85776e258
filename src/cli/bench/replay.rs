//! Benchmarks for recordings (`kubestep bench --workload load|replay|memory`): how fast a
//! recording loads, how fast a session replays one, and the peak memory of replaying a
//! generated 5,000-node, 50,000-pod recording.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::decision::peak_rss_mib;
use kubestep::recording::reader::{ReadOptions, read_bytes};
use kubestep::recording::{self, Recording};
use kubestep::session::{PodStatus, Session, SessionOptions, clock};
use kubestep::testing::workloads::synthetic;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadReport {
    pub recording: String,
    pub events: usize,
    /// Uncompressed bytes parsed.
    pub bytes: usize,
    pub seconds: f64,
    pub events_per_second: f64,
    pub mib_per_second: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayReport {
    pub recording: String,
    pub nodes: usize,
    pub pods: usize,
    pub events: usize,
    /// Reading and parsing the recording.
    pub load_seconds: f64,
    /// Building the session (cluster, snapshot, queue).
    pub setup_seconds: f64,
    /// Replaying every event and scheduling until nothing changes.
    pub replay_seconds: f64,
    /// Scheduling attempts made (pods popped from the queue).
    pub attempts: u64,
    pub bound: usize,
    pub unschedulable: usize,
    pub divergences: usize,
    pub attempts_per_second: f64,
    pub peak_rss_mib: Option<f64>,
}

fn uncompressed(bytes: &[u8]) -> Vec<u8> {
    use std::io::Read;
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return bytes.to_vec();
    }
    let mut out = Vec::new();
    let _ = flate2::read::MultiGzDecoder::new(bytes).read_to_end(&mut out);
    out
}

fn source_bytes(source: &str) -> Result<Vec<u8>, String> {
    if std::path::Path::new(source).exists() {
        return std::fs::read(source).map_err(|e| format!("{source}: {e}"));
    }
    recording::bundled::find(source)
        .map(|b| b.bytes().to_vec())
        .ok_or_else(|| format!("{source}: no such file or bundled recording"))
}

/// Parses the recording `runs` times (decompressed beforehand, so that only reading the
/// events is timed) and reports the best run.
pub fn load(source: &str, runs: usize) -> Result<LoadReport, String> {
    let text = uncompressed(&source_bytes(source)?);
    let mut best = Duration::MAX;
    let mut events = 0;
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        let rec = read_bytes(&text, source, ReadOptions::default()).map_err(|e| e.to_string())?;
        best = best.min(started.elapsed());
        events = rec.events.len();
    }
    let secs = best.as_secs_f64().max(1e-9);
    Ok(LoadReport {
        recording: source.to_string(),
        events,
        bytes: text.len(),
        seconds: secs,
        events_per_second: events as f64 / secs,
        mib_per_second: text.len() as f64 / secs / (1024.0 * 1024.0),
    })
}

/// Replays a recording end to end (until its last event plus ten minutes).
pub fn replay(source: &str) -> Result<ReplayReport, String> {
    let started = Instant::now();
    let rec = recording::open(source).map_err(|e| e.to_string())?;
    let load_seconds = started.elapsed().as_secs_f64();
    run(source, rec, load_seconds)
}

fn run(name: &str, rec: Recording, load_seconds: f64) -> Result<ReplayReport, String> {
    let counts = rec.counts();
    let deadline = clock::add(rec.end(), Duration::from_secs(600));
    let started = Instant::now();
    let request = kubestep::features::Request::default();
    // A recording's extenders are never called by a benchmark: timed is kubestep alone.
    if let Some(w) = rec.withheld_extenders(false) {
        tell!("{}: warning: {w}", crate::cli::invoked_name());
    }
    let mut s = Session::open_replay(rec, name, None, &request, SessionOptions::default(), false)
        .map_err(|e| e.to_string())?;
    let setup_seconds = started.elapsed().as_secs_f64();
    let started = Instant::now();
    s.run_until_with(deadline, None);
    let replay_seconds = started.elapsed().as_secs_f64().max(1e-9);
    let sum = s.summary();
    let attempts: u64 = sum.iter().map(|p| u64::from(p.attempts)).sum();
    let count = |st: PodStatus| sum.iter().filter(|p| p.status == st).count();
    Ok(ReplayReport {
        recording: name.to_string(),
        nodes: counts.nodes,
        pods: counts.pods,
        events: counts.events,
        load_seconds,
        setup_seconds,
        replay_seconds,
        attempts,
        bound: count(PodStatus::Bound),
        unschedulable: count(PodStatus::Unschedulable),
        // Equally ranked preemption candidates are listed, but are not divergences.
        divergences: s.divergences().iter().filter(|d| !d.tie).count(),
        attempts_per_second: attempts as f64 / replay_seconds,
        peak_rss_mib: peak_rss_mib(),
    })
}

/// Generates a synthetic recording into a temporary file and replays it in a child
/// process (this program, `bench --workload replay`), so the peak memory reported is that
/// of loading and replaying the recording alone, not of generating it.
pub fn memory(nodes: usize, pods: usize, pending: usize) -> Result<ReplayReport, String> {
    let dir = super::scratch_dir().map_err(|e| e.to_string())?;
    let file = dir.path().join(format!("synthetic-{nodes}-{pods}.jsonl"));
    std::fs::write(&file, synthetic(nodes, pods, pending))
        .map_err(|e| format!("{}: {e}", file.display()))
        .and_then(|()| replay_in_child(&file))
}

fn replay_in_child(file: &std::path::Path) -> Result<ReplayReport, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding this program: {e}"))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["bench", "--workload", "replay", "--json", "--recording"])
        .arg(file);
    let out = cmd
        .output()
        .map_err(|e| format!("running the replay: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "the replay failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let mut report: ReplayReport = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("reading the replay's report: {e}"))?;
    report.recording = "synthetic".into();
    Ok(report)
}

/// What `kubestep replay FILE --headless -o jsonl > /dev/null` took, as a user runs it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserPathReport {
    pub seconds: f64,
    pub peak_rss_mib: f64,
}

/// Runs this program as `replay FILE --headless -o jsonl` (the trace thrown away, as
/// `> /dev/null` does) and measures the whole process: wall time and peak RSS.
pub fn user_path(
    file: &std::path::Path,
    config: Option<&std::path::Path>,
    features: &kubestep::features::Features,
) -> Result<UserPathReport, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding this program: {e}"))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("replay")
        .arg(file)
        .args(["--headless", "-o", "jsonl"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit());
    if let Some(c) = config {
        cmd.arg("--config").arg(c);
    }
    // The child replays what this process decided: the version and the gates.
    cmd.args(["--kube-version", &features.k8s_version()]);
    if let Some(g) = features.gates.non_default_list() {
        cmd.args(["--feature-gates", &g]);
    }
    let started = Instant::now();
    let child = cmd
        .spawn()
        .map_err(|e| format!("running the replay: {e}"))?;
    let (code, maxrss_kb) = wait_with_rusage(child.id())?;
    let seconds = started.elapsed().as_secs_f64();
    if code != 0 {
        return Err(format!(
            "the replay exited with {code} (its error is above)"
        ));
    }
    Ok(UserPathReport {
        seconds,
        peak_rss_mib: maxrss_kb as f64 / 1024.0,
    })
}

/// Reaps the child and returns its exit code and peak RSS in KiB (`wait4`: the child's
/// own figures, not the largest of every child this process ever had).
pub(super) fn wait_with_rusage(pid: u32) -> Result<(i32, i64), String> {
    let mut status: libc::c_int = 0;
    // SAFETY: zeroed rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our own child, not yet reaped; both pointers are valid.
    let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
    if r < 0 {
        return Err(format!(
            "waiting for the replay: {}",
            std::io::Error::last_os_error()
        ));
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    Ok((code, usage.ru_maxrss))
}
