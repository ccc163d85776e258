//! Every look at a past attempt re-runs it in full detail and checks it against what the
//! decision path recorded (docs/architecture.md, "One decision path, detail on demand").
//! Here that check runs over every conformance case and every bundled recording.

use std::path::Path;
use std::time::Duration;

use kubestep::cluster::ClusterState;
use kubestep::config;
use kubestep::recording::{self, bundled};
use kubestep::session::{LocalActuator, Session, SessionOptions, clock};

/// Re-runs up to `max` of the session's kept attempts (evenly spread) and returns the
/// mismatches, each naming the attempt and pod.
fn check(s: &mut Session, label: &str, max: usize) -> (usize, Vec<String>) {
    let ids: Vec<(u64, String)> = s
        .history
        .attempts
        .iter()
        .map(|a| (a.id, a.pod.to_string()))
        .collect();
    let stride = ids.len().div_ceil(max.max(1)).max(1);
    let mut checked = 0;
    let mut bad = Vec::new();
    for (id, pod) in ids.into_iter().step_by(stride) {
        match s.attempt_detail(id) {
            Ok(d) => {
                checked += 1;
                if let Some(m) = &d.mismatch {
                    bad.push(format!("{label}: attempt {id} ({pod}): {m}"));
                }
            }
            Err(e) => bad.push(format!("{label}: attempt {id} ({pod}): {e}")),
        }
    }
    (checked, bad)
}

#[test]
fn every_conformance_case_reruns_as_recorded() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/cases");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    cases.sort();
    let (mut checked, mut bad) = (0, Vec::new());
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let cluster = ClusterState::load(&[&case.join("cluster.yaml"), &case.join("pod.yaml")])
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let cfg_path = case.join("config.yaml");
        let cfg = if cfg_path.exists() {
            config::load_file(&cfg_path).unwrap_or_else(|e| panic!("{name}: {e}"))
        } else {
            config::default_configuration()
        };
        let Ok(mut s) = Session::new(
            cluster,
            cfg,
            SessionOptions::default(),
            Box::new(LocalActuator),
        ) else {
            // Cases of invalid configurations are checked by tests/conformance.rs.
            continue;
        };
        s.continue_();
        let (n, b) = check(&mut s, &name, usize::MAX);
        checked += n;
        bad.extend(b);
    }
    assert!(checked >= cases.len() / 2, "only {checked} attempts re-run");
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn every_bundled_recording_reruns_as_recorded() {
    let (mut checked, mut bad) = (0, Vec::new());
    for entry in bundled::list().unwrap() {
        let rec = recording::open(entry.name).unwrap();
        let end = rec.end();
        let request = kubestep::features::Request::default();
        let mut s = Session::open_replay(
            rec,
            entry.name,
            None,
            &request,
            SessionOptions::default(),
            false,
        )
        .unwrap();
        s.run_until(clock::add(end, Duration::from_secs(600)));
        // The large recording has thousands of attempts at thousands of nodes: a sample.
        let max = if entry.name == "large" { 40 } else { 400 };
        let (n, b) = check(&mut s, entry.name, max);
        assert!(n > 0, "{}: no attempt re-run", entry.name);
        checked += n;
        bad.extend(b);
    }
    assert!(checked > 100, "{checked}");
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}
