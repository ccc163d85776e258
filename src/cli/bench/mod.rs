//! `kubestep bench`: scheduling throughput on generated scheduler_perf-like workloads.

use std::process::ExitCode;

use clap::{Args, ValueEnum};

use kubestep::testing::workloads::{self, Workload};

mod cluster;
mod decision;
mod replay;

use kubestep::framework::Detail;
use replay as replay_bench;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum WorkloadArg {
    Basic,
    AntiAffinity,
    TopologySpread,
    /// All three.
    All,
    /// Reading a recording (--recording): events per second.
    Load,
    /// Replaying a recording (--recording) end to end.
    Replay,
    /// Peak memory replaying a generated recording of --nodes nodes and --pods pods (one
    /// in ten pending).
    Memory,
    /// A production-shaped `kubectl get nodes,pods -A -o json` dump (full objects,
    /// --pods-per-node running pods on each of --nodes nodes, --pending pending pods):
    /// times explain (a pod that fits, one that fits nowhere) and replay --headless, each
    /// a whole process.
    Cluster,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PathArg {
    /// The whole process as users run it: `kubestep replay FILE --headless -o jsonl`
    /// on the workload written as a recording, with the default history and trace.
    User,
    /// The scheduling cycle alone, in process (`Scheduler::schedule_one`).
    Decision,
    Both,
}

#[derive(Debug, Args)]
#[command(after_long_help = "\
Examples:
  # scheduler_perf's basic workload on 5,000 nodes: the user's path (a whole replay
  # --headless process) and the decision path, pods per second
  kubestep bench

  # Every generated workload, JSON for a script
  kubestep bench --workload all --json

  # Write a workload as a recording, to time it or compare it with the real scheduler
  kubestep bench --workload basic --emit basic.jsonl
  kubestep replay basic.jsonl --headless -o json > /dev/null

  # A production-shaped dump (5,000 nodes, 150,000 running pods): explain and replay timed
  kubestep bench --workload cluster

  # Another configuration or version
  kubestep bench --config scheduler-config.yaml --kube-version 1.35")]
pub struct BenchArgs {
    #[arg(long, value_enum, default_value_t = WorkloadArg::Basic)]
    workload: WorkloadArg,
    #[arg(long, default_value_t = 5000)]
    nodes: usize,
    /// Measured pods (after the workload's untimed init pods); default 10000 for basic,
    /// 2000 for anti-affinity, 5000 for topology-spread, as in scheduler_perf.
    #[arg(long)]
    pods: Option<usize>,
    /// Scheduler configuration (the version's defaults without it).
    #[arg(long, value_name = "FILE")]
    config: Option<std::path::PathBuf>,
    #[command(flatten)]
    kube: super::kube::KubeArgs,
    /// Which path to time: the user's (a whole `replay --headless` process), the bare
    /// decision path, or both side by side.
    #[arg(long, value_enum, default_value_t = PathArg::Both)]
    path: PathArg,
    /// Print one JSON object per run instead of a table line.
    #[arg(long)]
    json: bool,
    /// The recording for --workload load and replay: a file or a bundled name.
    #[arg(
        long,
        default_value = "large",
        value_parser = super::completion::RecordingSource,
        hide_possible_values = true
    )]
    recording: String,
    /// Write the workload (basic, anti-affinity or topology-spread) as a recording to
    /// FILE instead of running it: its nodes, its init pods bound, its measured pods
    /// pending. `kubestep replay FILE --headless` then runs it the way users do.
    #[arg(long, value_name = "FILE")]
    emit: Option<std::path::PathBuf>,
    /// --workload cluster: running pods on each node.
    #[arg(long, default_value_t = 30)]
    pods_per_node: usize,
    /// --workload cluster: pending pods (every 100th fits nowhere).
    #[arg(long, default_value_t = 1000)]
    pending: usize,
    /// --workload cluster: write the dump gzip-compressed.
    #[arg(long)]
    gzip: bool,
}

pub fn run(a: BenchArgs) -> anyhow::Result<ExitCode> {
    if let WorkloadArg::Cluster = a.workload {
        cluster::run(&cluster::ClusterBench {
            spec: kubestep::testing::cluster_dump::DumpSpec {
                nodes: a.nodes,
                pods_per_node: a.pods_per_node,
                pending: a.pending,
                seed: 1,
            },
            emit: a.emit.clone(),
            json: a.json,
            gzip: a.gzip,
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    if matches!(
        a.workload,
        WorkloadArg::Load | WorkloadArg::Replay | WorkloadArg::Memory
    ) {
        return recordings(&a);
    }
    let workloads = match a.workload {
        WorkloadArg::Basic => vec![Workload::Basic],
        WorkloadArg::AntiAffinity => vec![Workload::AntiAffinity],
        WorkloadArg::TopologySpread => vec![Workload::TopologySpread],
        WorkloadArg::Load | WorkloadArg::Replay | WorkloadArg::Memory | WorkloadArg::Cluster => {
            Vec::new()
        }
        WorkloadArg::All => vec![
            Workload::Basic,
            Workload::AntiAffinity,
            Workload::TopologySpread,
        ],
    };
    // Generated workloads report no version: the user's, else the newest checked.
    let features = a.kube.resolve(&super::user_defaults(true), None)?;
    tell!("{}: bench: {}", super::invoked_name(), features.describe());
    for w in workloads {
        let cfg = match &a.config {
            Some(p) => kubestep::config::load_file_for(p, &features)?,
            None => kubestep::config::default_configuration_for(&features),
        };
        let pods = a.pods.unwrap_or(match w {
            Workload::Basic => 10000,
            Workload::AntiAffinity => 2000,
            Workload::TopologySpread => 5000,
        });
        if let Some(file) = &a.emit {
            let bytes =
                workloads::workload_recording(w, a.nodes, pods, cfg).map_err(anyhow::Error::msg)?;
            kubestep::output_file::create(file)
                .and_then(|mut f| std::io::Write::write_all(&mut f, &bytes))
                .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            continue;
        }
        if a.path != PathArg::Decision {
            user_path(&a, w, pods, cfg.clone())?;
        }
        if a.path != PathArg::User {
            decision_path(&a, w, pods, cfg)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A new private directory for generated workloads (mode 0700, an unpredictable name
/// under $TMPDIR), removed with everything in it when dropped: fixed names there let
/// another local user plant a link that bench would write through.
pub(super) fn scratch_dir() -> anyhow::Result<tempfile::TempDir> {
    let mut b = tempfile::Builder::new();
    b.prefix("kubestep-bench-");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Said, not left to the umask: only this user may look inside.
        b.permissions(std::fs::Permissions::from_mode(0o700));
    }
    b.tempdir().map_err(|e| {
        anyhow::anyhow!(
            "creating a private directory in {}: {e}",
            std::env::temp_dir().display()
        )
    })
}

/// Writes the workload as a recording and times `kubestep replay` on it in a child.
fn user_path(
    a: &BenchArgs,
    w: Workload,
    pods: usize,
    cfg: kubestep::config::KubeSchedulerConfiguration,
) -> anyhow::Result<()> {
    let bytes =
        workloads::workload_recording(w, a.nodes, pods, cfg.clone()).map_err(anyhow::Error::msg)?;
    let dir = scratch_dir()?;
    let file = dir.path().join(format!("{}.jsonl", w.name()));
    std::fs::write(&file, bytes).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let r = replay_bench::user_path(&file, a.config.as_deref(), &cfg.features);
    drop(dir);
    let r = r.map_err(anyhow::Error::msg)?;
    let rate = pods as f64 / r.seconds.max(1e-9);
    if a.json {
        let v = serde_json::json!({
            "workload": w.name(), "path": "user", "nodes": a.nodes, "pods": pods,
            "seconds": r.seconds, "podsPerSecond": rate, "peakRssMib": r.peak_rss_mib,
        });
        say!("{v}")?;
    } else {
        say!(
            "{:<16} user path (replay --headless, whole process)  {} nodes  {} pods  {:.2}s  {:.0} pods/s  peak {:.0} MiB",
            w.name(),
            a.nodes,
            pods,
            r.seconds,
            rate,
            r.peak_rss_mib
        )?;
    }
    Ok(())
}

fn decision_path(
    a: &BenchArgs,
    w: Workload,
    pods: usize,
    cfg: kubestep::config::KubeSchedulerConfiguration,
) -> anyhow::Result<()> {
    let r = decision::run(w, a.nodes, pods, Detail::Decision, cfg).map_err(anyhow::Error::msg)?;
    if a.json {
        say!("{}", serde_json::to_string(&r)?)?;
        return Ok(());
    }
    say!(
        "{:<16} decision path (schedule_one, in process)  {} nodes  {} pods ({} bound, {} unschedulable)  {:.2}s  {:.0} pods/s  peak {:.0} MiB",
        w.name(),
        r.nodes,
        r.pods,
        r.scheduled,
        r.unschedulable,
        r.seconds,
        r.pods_per_second,
        r.peak_rss_mib.unwrap_or(0.0)
    )?;
    let phases: Vec<String> = r
        .phase_micros
        .iter()
        .map(|(k, v)| format!("{k} {v:.1}µs"))
        .collect();
    if !phases.is_empty() {
        say!("{:<16} per pod: {}", "", phases.join(", "))?;
    }
    Ok(())
}

fn recordings(a: &BenchArgs) -> anyhow::Result<ExitCode> {
    let report = match a.workload {
        WorkloadArg::Load => {
            let r = replay_bench::load(&a.recording, 5).map_err(anyhow::Error::msg)?;
            if a.json {
                say!("{}", serde_json::to_string(&r)?)?;
            } else {
                say!(
                    "load {}: {} events, {:.1} MiB in {:.3}s: {:.0} events/s, {:.0} MiB/s",
                    r.recording,
                    r.events,
                    r.bytes as f64 / (1024.0 * 1024.0),
                    r.seconds,
                    r.events_per_second,
                    r.mib_per_second
                )?;
            }
            return Ok(ExitCode::SUCCESS);
        }
        WorkloadArg::Replay => replay_bench::replay(&a.recording),
        _ => {
            let pods = a.pods.unwrap_or(50_000);
            replay_bench::memory(a.nodes, pods, pods / 10)
        }
    }
    .map_err(anyhow::Error::msg)?;
    if a.json {
        say!("{}", serde_json::to_string(&report)?)?;
    } else {
        let r = &report;
        say!(
            "replay {}: {} nodes, {} pods, {} events; load {:.2}s, setup {:.2}s, replay {:.2}s: {} attempts ({:.0}/s), {} bound, {} unschedulable, {} divergences; peak {:.0} MiB",
            r.recording,
            r.nodes,
            r.pods,
            r.events,
            r.load_seconds,
            r.setup_seconds,
            r.replay_seconds,
            r.attempts,
            r.attempts_per_second,
            r.bound,
            r.unschedulable,
            r.divergences,
            r.peak_rss_mib.unwrap_or(0.0)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    #[cfg(unix)]
    #[test]
    fn scratch_directories_are_private_and_unpredictable() {
        use std::os::unix::fs::PermissionsExt;
        let (a, b) = (super::scratch_dir().unwrap(), super::scratch_dir().unwrap());
        assert_ne!(a.path(), b.path());
        let mode = std::fs::metadata(a.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        let gone = a.path().to_path_buf();
        std::fs::write(gone.join("w.jsonl"), "x").unwrap();
        drop(a);
        assert!(!gone.exists(), "removed with what it holds");
    }
}
