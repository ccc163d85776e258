//! `kubestep bench --workload cluster`: a production-shaped dump (full objects, running
//! pods on every node, pending pods) and the commands a person runs on it, each timed as
//! a whole child process: explain of a pod that fits, explain of one that fits nowhere,
//! and a headless replay.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use kubestep::testing::cluster_dump::{self, DumpSpec, DumpStats};

use super::replay::wait_with_rusage;

pub struct ClusterBench {
    pub spec: DumpSpec,
    pub emit: Option<PathBuf>,
    pub json: bool,
    pub gzip: bool,
}

/// Writes the dump to `file` (gzip when asked) and says what it holds.
fn write(file: &Path, spec: &DumpSpec, gzip: bool) -> anyhow::Result<DumpStats> {
    let f = kubestep::output_file::create(file)
        .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let stats = if gzip {
        let mut w = std::io::BufWriter::with_capacity(
            1 << 20,
            flate2::write::GzEncoder::new(f, flate2::Compression::fast()),
        );
        let s = cluster_dump::write_dump(&mut w, spec)?;
        w.into_inner()
            .map_err(|e| anyhow::anyhow!("{}: {}", file.display(), e.error()))?
            .finish()?
            .sync_all()?;
        s
    } else {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        let s = cluster_dump::write_dump(&mut w, spec)?;
        // On disk before anything is timed: writing back 800 MB slowed the first run.
        w.into_inner()
            .map_err(|e| anyhow::anyhow!("{}: {}", file.display(), e.error()))?
            .sync_all()?;
        s
    };
    Ok(DumpStats {
        bytes: std::fs::metadata(file)?.len(),
        ..stats
    })
}

struct Run {
    seconds: f64,
    peak_rss_mib: f64,
    code: i32,
}

/// Runs `kubestep ARGS` as a child and times it. An exit code other than `expected` is an
/// error carrying what the command said: a time of a failed run measures nothing.
fn time(args: &[&str], expected: i32) -> anyhow::Result<Run> {
    let exe = std::env::current_exe()?;
    // stderr to a file, not a pipe: nobody reads a pipe while the child runs. An
    // unnamed file in a private place: a predictable name in $TMPDIR can be a planted link.
    let mut errors = tempfile::tempfile()?;
    let started = Instant::now();
    let child = Command::new(exe)
        .args(args)
        .stdout(Stdio::null())
        .stderr(errors.try_clone()?)
        .spawn()?;
    let waited = wait_with_rusage(child.id()).map_err(anyhow::Error::msg);
    let said = read_from_start(&mut errors);
    let (code, maxrss_kb) = waited?;
    if code != expected {
        anyhow::bail!(
            "`kubestep {}` exited {code}, not {expected}: {}",
            args.join(" "),
            said.trim()
        );
    }
    Ok(Run {
        seconds: started.elapsed().as_secs_f64(),
        peak_rss_mib: maxrss_kb as f64 / 1024.0,
        code,
    })
}

/// What a child wrote to `f` (its standard error), read from the start.
fn read_from_start(f: &mut std::fs::File) -> String {
    use std::io::{Read, Seek};
    let mut said = String::new();
    let _ = f.rewind().and_then(|()| f.read_to_string(&mut said));
    said
}

pub fn run(b: &ClusterBench) -> anyhow::Result<()> {
    let ext = if b.gzip { "json.gz" } else { "json" };
    // Without --emit the dump goes to a private directory, removed when it drops.
    let (file, scratch) = match &b.emit {
        Some(f) => (f.clone(), None),
        None => {
            let d = super::scratch_dir()?;
            (d.path().join(format!("cluster.{ext}")), Some(d))
        }
    };
    let keep = scratch.is_none();
    let started = Instant::now();
    let stats = write(&file, &b.spec, b.gzip)?;
    let mib = stats.bytes as f64 / (1024.0 * 1024.0);
    if !b.json {
        say!(
            "cluster dump {}: {} nodes, {} running pods, {} pending, {:.0} MiB, written in {:.1}s",
            file.display(),
            stats.nodes,
            stats.running,
            stats.pending,
            mib,
            started.elapsed().as_secs_f64()
        )?;
    }
    if keep {
        say!(
            "explain a pod that fits: kubestep explain --cluster {} --pod {}",
            file.display(),
            stats.fits
        )?;
        say!(
            "explain a pod that fits nowhere: kubestep explain --cluster {} --pod {}",
            file.display(),
            stats.fits_nowhere
        )?;
        return Ok(());
    }
    let path = file.display().to_string();
    // With the exit code each must give: explain says 1 for a pod that fits nowhere.
    let commands: [(&str, Vec<&str>, i32); 3] = [
        (
            "explain (fits)",
            vec!["explain", "--cluster", &path, "--pod", &stats.fits],
            0,
        ),
        (
            "explain (fits nowhere)",
            vec!["explain", "--cluster", &path, "--pod", &stats.fits_nowhere],
            1,
        ),
        (
            "replay --headless",
            vec!["replay", &path, "--headless", "-o", "jsonl"],
            0,
        ),
    ];
    let result = (|| -> anyhow::Result<()> {
        for (what, args, expected) in &commands {
            let r = time(args, *expected)?;
            if b.json {
                let v = serde_json::json!({
                    "workload": "cluster", "command": what, "nodes": stats.nodes,
                    "runningPods": stats.running, "pendingPods": stats.pending,
                    "dumpBytes": stats.bytes, "seconds": r.seconds,
                    "peakRssMib": r.peak_rss_mib, "exitCode": r.code,
                });
                say!("{v}")?;
            } else {
                say!(
                    "{what:<24} {:.2}s  peak {:.0} MiB  exit {}",
                    r.seconds,
                    r.peak_rss_mib,
                    r.code
                )?;
            }
        }
        Ok(())
    })();
    let _ = std::fs::remove_file(&file);
    result
}
