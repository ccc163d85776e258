//! Device selectors built to exhaust memory are refused, quickly, by `explain` itself
//! (tests/data/regressions/README.md).

use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn a_replace_chain_selector_is_refused_by_its_estimated_cost() {
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_kubestep"))
        .args([
            "explain",
            "--cluster",
            "tests/data/regressions/hardening-2/cel_replace8.cluster.yaml",
            "--pod",
            "tests/data/regressions/hardening-2/cel_pod.yaml",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("kubestep runs");
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("CEL compile error: compilation failed: too complex, exceeds cost limit"),
        "{text}"
    );
    // A refused selector is a verdict on the pod, not a crash.
    assert!(out.status.code().is_some(), "{text}");
}
