//! Every input is bounded (src/framework/limits.rs): a line, a document or a List's item
//! holds at most 64 MiB, a file read whole at most 16 MiB (a scheduler configuration
//! 4 MiB). Past that, kubestep exits 2 naming the file and the line, having held no
//! more than the limit: the bombs here (a few hundred KiB of gzip expanding to 200 MB
//! without a newline, sparse files) aborted with `memory allocation failed` or were read
//! whole. Peak memory is read from the child's VmHWM (Linux), polled while it runs.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// More than any cap: 200 MB.
const BOMB: usize = 200 << 20;

struct Run {
    code: Option<i32>,
    stderr: String,
    /// Peak resident memory in MiB (None where /proc is not there).
    peak: Option<u64>,
}

fn kubestep(args: &[&str]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubestep"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubestep runs");
    let status = format!("/proc/{}/status", child.id());
    let stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut { stderr }, &mut s).ok();
        s
    });
    let mut peak = None;
    let code = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st.code();
        }
        if let Some(kb) = std::fs::read_to_string(&status).ok().and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        }) {
            peak = Some(peak.unwrap_or(0).max(kb / 1024));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Run {
        code,
        stderr: reader.join().expect("reader"),
        peak,
    }
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kubestep-limits-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// `head`, then `BOMB` bytes of `a` and no newline, gzip-compressed into `path`.
fn gzip_bomb(path: &Path, head: &str) {
    let f = std::fs::File::create(path).expect("create");
    let mut gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
    gz.write_all(head.as_bytes()).expect("write");
    let block = vec![b'a'; 1 << 20];
    for _ in 0..BOMB >> 20 {
        gz.write_all(&block).expect("write");
    }
    gz.finish().expect("finish");
}

/// A sparse file of `len` zero bytes: no newline, no disk.
fn sparse(path: &Path, len: u64) {
    std::fs::File::create(path)
        .and_then(|f| f.set_len(len))
        .expect("sparse file");
}

fn bounded(run: &Run, what: &str) {
    if let Some(p) = run.peak {
        assert!(p < 600, "{what}: peak {p} MiB");
    }
}

const HEADER: &str = r#"{"kubestep":"recording","version":1,"started":"2026-01-01T00:00:00Z"}"#;

#[test]
fn a_one_line_gzip_bomb_in_a_recording_names_its_line() {
    let dir = temp_dir("rec");
    let file = dir.join("bomb.jsonl.gz");
    gzip_bomb(&file, &format!("{HEADER}\n{{\"at\":\""));
    let f = file.display().to_string();
    let run = kubestep(&["replay", &f, "--headless"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "{f}:2: the line is longer than 64 MiB (the most kubestep reads of one line)"
        )),
        "{}",
        run.stderr
    );
    bounded(&run, "recording");
    // Not compressed: a sparse file is read line by line too, never whole.
    let plain = dir.join("bomb.jsonl");
    sparse(&plain, 5 << 30);
    let p = plain.display().to_string();
    let run = kubestep(&["replay", &p, "--headless"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr
            .contains(&format!("{p}:1: the line is longer than 64 MiB")),
        "{}",
        run.stderr
    );
    bounded(&run, "plain recording");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn yaml_and_json_manifests_cap_lines_documents_and_items() {
    let dir = temp_dir("manifest");
    let cases = [
        (
            "line.yaml.gz",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ",
            ":4: the line is longer than 64 MiB (the most kubestep reads of one line)",
        ),
        (
            "item.json.gz",
            "{\"kind\":\"List\",\"apiVersion\":\"v1\",\"items\":[\n{\"kind\":\"Pod\",\"metadata\":{\"name\":\"",
            ":2: the item starting here is larger than 64 MiB (the most kubestep reads of one item)",
        ),
        (
            "doc.json.gz",
            "\n{\"kind\":\"Pod\",\"metadata\":{\"name\":\"",
            ":2: the document starting here is larger than 64 MiB (the most kubestep reads of one document)",
        ),
    ];
    for (name, head, said) in cases {
        let file = dir.join(name);
        gzip_bomb(&file, head);
        let f = file.display().to_string();
        let run = kubestep(&["replay", &f, "--headless"]);
        assert_eq!(run.code, Some(2), "{name}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!("{f}{said}")),
            "{name}: {}",
            run.stderr
        );
        bounded(&run, name);
    }
    // A YAML List item of many short lines is capped as a whole.
    let file = dir.join("items.yaml.gz");
    let f = std::fs::File::create(&file).expect("create");
    let mut gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
    gz.write_all(b"apiVersion: v1\nkind: List\nitems:\n- kind: ConfigMap\n  data:\n")
        .expect("write");
    let line = "    k: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n".repeat(1 << 10);
    for _ in 0..(BOMB / line.len()) {
        gz.write_all(line.as_bytes()).expect("write");
    }
    gz.finish().expect("finish");
    let f = file.display().to_string();
    let run = kubestep(&["replay", &f, "--headless"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "{f}:4: the List item starting here is larger than 64 MiB"
        )),
        "{}",
        run.stderr
    );
    bounded(&run, "items.yaml.gz");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_scheduler_log_without_newlines_names_its_line() {
    let dir = temp_dir("log");
    let log = dir.join("scheduler.log");
    sparse(&log, BOMB as u64);
    let l = log.display().to_string();
    let run = kubestep(&["replay", "demo", "--headless", "--scheduler-log", &l]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "{l}: line 1: the line is longer than 64 MiB (the most kubestep reads of one line)"
        )),
        "{}",
        run.stderr
    );
    bounded(&run, "scheduler log");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn files_read_whole_are_capped() {
    let dir = temp_dir("whole");
    let big = dir.join("big");
    sparse(&big, (16 << 20) + 1);
    let b = big.display().to_string();
    let run = kubestep(&["replay", "demo", "--headless", "--script", &b]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "reading script {b}: larger than 16 MiB (the most kubestep reads of a script)"
        )),
        "{}",
        run.stderr
    );
    // A device has no size to check first: it is read up to the limit.
    for config in [b.as_str(), "/dev/zero"] {
        let run = kubestep(&["replay", "demo", "--headless", "--config", config]);
        assert_eq!(run.code, Some(2), "{}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "{config}: cannot read the scheduler configuration: larger than 4 MiB \
                 (the most kubestep reads of a scheduler configuration)"
            )),
            "{}",
            run.stderr
        );
        bounded(&run, config);
    }
    for kubeconfig in [b.as_str(), "/dev/zero"] {
        let run = kubestep(&["explain", "p", "--kubeconfig", kubeconfig]);
        assert_eq!(run.code, Some(2), "{}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "kubeconfig {kubeconfig}: larger than 16 MiB (the most kubestep reads of a kubeconfig)"
            )) || run.stderr.contains(&format!(
                "kubeconfig {kubeconfig}: cannot read it: larger than 16 MiB (the most kubestep reads of a kubeconfig)"
            )),
            "{}",
            run.stderr
        );
        bounded(&run, kubeconfig);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
