//! Replay's memory is bounded by `--history`, however long the recording's idle stretches
//! (a pending pod retried every five minutes for a year), and times far apart in one
//! recording (a header ~292 years before its events) are exact, not a spin. Peak memory
//! is read from the child's VmHWM (Linux), polled while it runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/regressions/hardening-2")
        .join(name)
}

/// Runs `kubestep replay FILE --headless ARGS`; returns its last stdout line and its peak
/// resident memory in MiB (None where /proc is not there).
fn replay_peak(file: &Path, args: &[&str]) -> (String, Option<u64>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubestep"))
        .arg("replay")
        .arg(file)
        .arg("--headless")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubestep runs");
    let status = format!("/proc/{}/status", child.id());
    let stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut { stdout }, &mut s).ok();
        s
    });
    let mut peak = None;
    while child.try_wait().expect("wait").is_none() {
        if let Some(kb) = std::fs::read_to_string(&status).ok().and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        }) {
            peak = Some(peak.unwrap_or(0).max(kb / 1024));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = reader.join().expect("reader");
    (out.lines().last().unwrap_or_default().to_string(), peak)
}

#[test]
fn a_year_of_retries_stays_within_history() {
    // The bundled volumes-zones recording with one pod arriving a year later: two pending
    // pods were retried every five minutes meanwhile (~200,000 attempts), which took 3.5 GB
    // and aborted when each attempt kept ~12 KB whatever --history said. (They now wait
    // for the next event; the streamed advance below still retries for weeks.)
    let text = std::fs::read_to_string(data("vz_m1.jsonl")).expect("vz_m1");
    let year = text.replace(
        "\"at\": \"2026-04-02T09:00:00Z\"",
        "\"at\": \"2027-03-02T09:00:00Z\"",
    );
    assert_ne!(text, year, "the moved arrival is in the file");
    let dir = std::env::temp_dir().join(format!("kubestep-mem-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("vz_y1.jsonl");
    std::fs::write(&file, year).expect("write");
    for (args, limit_mib) in [(&[][..], 160), (&["--history", "8MiB"][..], 80)] {
        let (last, peak) = replay_peak(&file, args);
        assert!(last.contains("\"summary\""), "{args:?}: no summary: {last}");
        assert!(
            last.contains("aws-node-vj4tf"),
            "{args:?}: the late pod: {last}"
        );
        if let Some(p) = peak {
            assert!(
                p < limit_mib,
                "{args:?}: peak {p} MiB, more than {limit_mib} MiB"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_header_centuries_before_its_events_replays_as_the_events_say() {
    // `started` 1733: the queue's 30 s flush ticks counted from it overflowed a nanosecond
    // count (292 years) and the clock never moved on.
    let (last, _) = replay_peak(&data("vz_started_1733-06.jsonl"), &[]);
    let v: serde_json::Value = serde_json::from_str(&last).expect("summary JSON");
    let pods = v["summary"]["pods"].as_array().expect("pods");
    assert_eq!(pods.len(), 18, "{v}");
    let bound = pods.iter().filter(|p| p["status"] == "Bound").count();
    assert_eq!(bound, 14, "{v}");
}

#[test]
fn a_scripted_advance_streams_its_trace() {
    // `advance 2400h` over the gang recording, whose members time out and retry without
    // end (hardening-3/script-advance-2400h.txt): the command's whole trace was held
    // before printing, 1.3 GB at 2400h, 290 MB at the 480h used here; now each piece is
    // printed as it is made.
    let dir = std::env::temp_dir().join(format!("kubestep-advance-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let script = dir.join("advance.txt");
    std::fs::write(&script, "advance 480h\nshow queue\n").expect("write");
    let (last, peak) = replay_peak(
        Path::new("gang-scheduling"),
        &["--history", "0", "--script", script.to_str().unwrap()],
    );
    assert!(last.contains("\"summary\""), "no summary: {last}");
    if let Some(p) = peak {
        assert!(p < 96, "peak {p} MiB for a streamed advance");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
