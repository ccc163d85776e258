//! Inputs that once made kubestep misbehave (tests/data/regressions/README.md): each must
//! now run to its summary and exit with the code its verdict calls for.

use std::path::Path;
use std::process::{Command, Output};

fn kubestep(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubestep"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("kubestep runs")
}

fn last_line(out: &Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().expect("some output");
    serde_json::from_str(last).expect("the last line is JSON")
}

#[test]
fn gang_that_cannot_fit_times_out_instead_of_cycling() {
    for f in ["gang-replay-hang-1.jsonl", "gang-replay-hang-2.jsonl"] {
        let path = format!("tests/data/regressions/{f}");
        let out = kubestep(&["replay", &path, "--headless"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{f}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let summary = last_line(&out);
        let pods = summary["summary"]["pods"].as_array().expect("pods");
        let sweep: Vec<_> = pods
            .iter()
            .filter(|p| p["pod"].as_str().unwrap().contains("resnet-sweep"))
            .collect();
        assert_eq!(sweep.len(), 10, "{f}");
        // The gang cannot complete: no member binds, and some waited out their Permit time.
        assert!(sweep.iter().all(|p| p["status"] == "Unschedulable"), "{f}");
        assert!(
            sweep.iter().any(|p| p["message"]
                .as_str()
                .unwrap()
                .contains("timeout after waiting 30s")),
            "{f}: {sweep:?}"
        );
    }
}

#[test]
fn a_pod_the_recording_binds_later_stays_queued_and_is_assumed_when_it_fits() {
    let out = kubestep(&[
        "replay",
        "tests/data/regressions/deferred-leaves-queue.jsonl",
        "--headless",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let attempts: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &serde_json::Value| v.get("attempt").is_some())
        .collect();
    let order: Vec<(&str, &str)> = attempts
        .iter()
        .map(|a| (a["pod"].as_str().unwrap(), a["result"].as_str().unwrap()))
        .collect();
    // a is retried when n2 joins, before the younger b, and holds n2 until its recorded
    // binding: b then finds no room anywhere.
    assert_eq!(
        order,
        [
            ("default/a", "Unschedulable"),
            ("default/b", "Unschedulable"),
            ("default/a", "Deferred"),
            ("default/b", "Unschedulable"),
        ],
        "{text}"
    );
    assert_eq!(attempts[2]["node"], "n2");
    let summary = last_line(&out);
    let pods = summary["summary"]["pods"].as_array().unwrap();
    let status = |name: &str| {
        pods.iter()
            .find(|p| p["pod"] == name)
            .map(|p| (p["status"].clone(), p["message"].clone()))
            .unwrap()
    };
    assert_eq!(status("default/a").0, "Bound");
    let (b, msg) = status("default/b");
    assert_eq!(b, "Unschedulable");
    assert!(
        msg.as_str()
            .unwrap()
            .starts_with("0/2 nodes are available: 2 Insufficient cpu."),
        "{msg}"
    );
    assert_eq!(summary["summary"]["divergences"], serde_json::json!([]));
}

#[test]
fn blank_lines_are_read_as_nothing() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/regressions/blank-lines.jsonl.gz");
    let rec = kubestep::recording::reader::read_file(&path, Default::default()).unwrap();
    assert!(rec.events.is_empty());
    assert!(rec.warnings.is_empty(), "{:?}", rec.warnings);
    let out = kubestep(&[
        "replay",
        "tests/data/regressions/blank-lines.jsonl.gz",
        "--headless",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(last_line(&out)["summary"]["pods"], serde_json::json!([]));
}

#[test]
fn explain_exit_codes_match_the_verdict() {
    let dir = std::env::temp_dir().join(format!("kubestep-regr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let pod = |cpu: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: default}}\nspec:\n  containers:\n  - name: app\n    image: nginx\n    resources: {{requests: {{cpu: \"{cpu}\"}}}}\n"
        )
    };
    let ok = write("ok.yaml", &pod("100m"));
    let neg = write("neg.yaml", &pod("-500m"));
    // Port 9 (discard) on loopback: nothing listens, the extender is unreachable.
    let ext = write(
        "ext.yaml",
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nextenders:\n- urlPrefix: http://127.0.0.1:9/\n  filterVerb: filter\n",
    );
    let cluster = "recordings/example-cluster.yaml";

    let out = kubestep(&["explain", "--cluster", cluster, "--pod", &ok]);
    assert_eq!(out.status.code(), Some(0));

    let out = kubestep(&[
        "explain",
        "--cluster",
        cluster,
        "--pod",
        &ok,
        "--config",
        &ext,
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    let out = kubestep(&["explain", "--cluster", cluster, "--pod", &neg]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("neg.yaml")
            && err.contains("default/p")
            && err.contains("resources.requests.cpu"),
        "{err}"
    );

    let text = std::fs::read_to_string(cluster).unwrap();
    let bad_node = write(
        "nodes.yaml",
        &text.replacen(
            "allocatable:\n    cpu: \"8\"",
            "allocatable:\n    cpu: \"-8\"",
            1,
        ),
    );
    let out = kubestep(&["explain", "--cluster", &bad_node, "--pod", &ok]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nodes.yaml:")
            && err.contains("status.allocatable.cpu")
            && err.contains("Node ")
            && err.contains("must be greater than or equal to 0"),
        "{err}"
    );

    let out = kubestep(&[
        "explain",
        "--cluster",
        cluster,
        "--pod",
        &ok,
        "--config",
        "missing.yaml",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("os error 2").count(),
        1,
        "the cause once, with what the file is for: {err}"
    );
    assert!(err.contains("scheduler configuration"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A recording's header names an extender: opening the file must not call it (nor read the
/// TLS files it names); the replay says so, and `--call-extenders` is the opt-in.
#[test]
fn a_recordings_extenders_are_named_not_called() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a local port");
    listener.set_nonblocking(true).expect("non-blocking");
    let port = listener.local_addr().expect("its address").port();
    let original = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/regressions/hardening-3/recording-header-extender.jsonl");
    let text = std::fs::read_to_string(&original)
        .expect("the regression input")
        .replace("127.0.0.1:18103", &format!("127.0.0.1:{port}"));
    let dir = std::env::temp_dir().join(format!("kubestep-header-ext-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let file = dir.join("rec.jsonl");
    std::fs::write(&file, text).expect("written");
    let file = file.to_str().unwrap();
    for (args, done) in [
        (vec!["replay", file, "--headless", "-o", "text"], "summary:"),
        (
            vec!["explain", "--cluster", file, "--pending"],
            "pending pod(s)",
        ),
    ] {
        let out = kubestep(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.code().is_some_and(|c| c < 2), "{args:?}: {err}");
        assert!(
            err.contains("names 1 extender(s)") && err.contains("not called"),
            "{args:?}: {err}"
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(done),
            "{args:?}: {out:?}"
        );
        assert!(
            listener.accept().is_err(),
            "{args:?} connected to the header's extender"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A pod named with terminal escape sequences: every text output shows them escaped.
#[test]
fn control_characters_in_names_are_escaped_in_text_output() {
    let file = "tests/data/regressions/hardening-3/pod-name-escape-seq.jsonl";
    for args in [
        vec!["replay", file, "--headless", "-o", "text"],
        vec!["explain", "--cluster", file, "--pending"],
        vec!["explain", "--cluster", file, "--pod", "default/a"],
    ] {
        let out = kubestep(&args);
        for (what, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            assert!(
                !bytes.iter().any(|&b| b == 0x1b || b == 0x07),
                "{args:?} {what}: {}",
                String::from_utf8_lossy(bytes)
            );
        }
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            all.contains(r"a\x1b[31mRED\x1b]0;pwned\x07"),
            "{args:?}: {all}"
        );
    }
}

/// A kubeconfig token with a line break: refused naming the user entry (never the token),
/// exit 2, no panic.
#[test]
fn a_token_with_a_line_break_is_refused_naming_its_user() {
    let out = Command::new(env!("CARGO_BIN_EXE_kubestep"))
        .args(["live", "--headless", "--duration", "1s"])
        .env(
            "KUBECONFIG",
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data/regressions/hardening-3/kc-token-newline.yaml"),
        )
        .output()
        .expect("kubestep runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the token of user \"u\" holds a line break"),
        "{err}"
    );
    assert!(
        !err.contains("SECRETTOKEN123") && !err.contains("panicked"),
        "{err}"
    );
}

/// One unschedulable pod and an event in 2100 (hardening-3/far-future-event-hang.jsonl):
/// the leftover flush retried it every five minutes until then (millions of identical
/// attempts). Nothing changed, so it waits for that event.
#[test]
fn a_pod_nothing_happens_to_is_not_retried_until_the_far_future() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubestep"))
        .args([
            "replay",
            "tests/data/regressions/hardening-3/far-future-event-hang.jsonl",
            "--headless",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("kubestep runs");
    let stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut { stdout }, &mut s).ok();
        s
    });
    // A hang guard, not a timing: the fixed replay takes milliseconds.
    let started = std::time::Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > std::time::Duration::from_secs(120) {
            let _ = child.kill();
            panic!("the replay spun for two minutes");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let text = reader.join().expect("reader");
    let attempts = text.lines().filter(|l| l.contains("\"attempt\":")).count();
    assert_eq!(attempts, 1, "{}", &text[..text.len().min(2000)]);
    let last: serde_json::Value =
        serde_json::from_str(text.lines().last().expect("a summary")).expect("JSON");
    assert_eq!(
        last["summary"]["pods"][0]["status"], "Unschedulable",
        "{last}"
    );
    // `show queue` says why it waits.
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubestep"))
        .args([
            "replay",
            "tests/data/regressions/hardening-3/far-future-event-hang.jsonl",
            "--headless",
            "-o",
            "text",
            "--script",
            "-",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("kubestep runs");
    std::io::Write::write_all(
        &mut child.stdin.take().expect("stdin"),
        b"advance 1h\nshow queue\n",
    )
    .expect("the script");
    let out = child.wait_with_output().expect("kubestep ends");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("attempts 1, retry at the next event: nothing changed"),
        "{text}"
    );
}
