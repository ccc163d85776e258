//! End to end: the real binary in a detached tmux session of fixed size, driven with
//! send-keys and read with capture-pane, on the demo: step, continue until a pod waits at
//! Permit, approve it, open help, quit. Skipped (with a message) when tmux is absent.

use std::process::Command;
use std::time::{Duration, Instant};

struct Tmux {
    name: String,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .args(args)
            .output()
            .expect("running tmux")
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.name];
        args.extend_from_slice(keys);
        assert!(self.run(&args).status.success(), "send-keys {keys:?}");
    }

    fn screen(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-t", &self.name]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn alive(&self) -> bool {
        self.run(&["has-session", "-t", &self.name])
            .status
            .success()
    }

    /// Waits until the screen shows `text`; the last screen in the failure message.
    fn wait_for(&self, text: &str) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if s.contains(text) {
                return s;
            }
            if start.elapsed() > Duration::from_secs(20) {
                panic!("screen never showed {text:?}; it shows:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.name])
            .output();
    }
}

#[test]
fn demo_in_tmux() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("SKIPPED tui_tmux: tmux is not installed (apt-get install tmux)");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_kubestep");
    let config_home = std::env::temp_dir().join(format!("kubestep-tmux-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&config_home);
    let t = Tmux {
        name: format!("kubestep-e2e-{}", std::process::id()),
    };
    // A fixed scene (the example cluster plus one ManualApproval pod), opened from files
    // as a user would; the bundled demo evolves with the recordings.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
    let scene = config_home.join("scene.yaml");
    let scene_text = format!(
        "{}\n---\n{}",
        read("recordings/example-cluster.yaml"),
        read("src/tui/demo-approval.yaml")
    );
    std::fs::write(&scene, scene_text).unwrap();
    let cfg = config_home.join("scheduler.yaml");
    std::fs::write(&cfg, read("src/tui/demo-config.yaml")).unwrap();
    let (scene, cfg) = (scene.display().to_string(), cfg.display().to_string());
    let xdg = format!("XDG_CONFIG_HOME={}", config_home.display());
    let out = t.run(&[
        "new-session",
        "-d",
        "-s",
        &t.name,
        "-x",
        "100",
        "-y",
        "30",
        "-e",
        &xdg,
        "-e",
        "COLORTERM=truecolor",
        bin,
        "tui",
        &scene,
        "--config",
        &cfg,
    ]);
    assert!(out.status.success(), "tmux new-session: {out:?}");

    let s = t.wait_for("Waiting at Permit 0");
    assert!(s.contains("⏸ paused"), "{s}");
    assert!(s.contains("shop/release-gate-0"), "{s}");

    // One step: the first pod is popped.
    t.keys(&["n"]);
    let s = t.wait_for("QueueSort");
    assert!(s.contains("Cycle · attempt 1"), "{s}");

    // Continue: pods are scheduled until the ManualApproval pod waits at Permit.
    t.keys(&["c"]);
    let s = t.wait_for("Waiting at Permit 1");
    assert!(s.contains("ManualApproval") || s.contains(" MA "), "{s}");
    t.keys(&["c"]);
    t.wait_for("paused");

    // Approve it: it binds at once.
    t.keys(&["a"]);
    let s = t.wait_for("allowed by ManualApproval");
    assert!(s.contains("Waiting at Permit 0"), "{s}");
    assert!(s.contains("Bound on"), "{s}");

    // Help, generated from the keymap.
    t.keys(&["?"]);
    let s = t.wait_for("Keys (config");
    assert!(s.contains("step one plugin"), "{s}");
    t.keys(&["Escape"]);

    // Quit: nothing waits, so no question; the session ends.
    t.keys(&["q"]);
    let start = Instant::now();
    while t.alive() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!t.alive(), "kubestep did not quit:\n{}", t.screen());
    let _ = std::fs::remove_dir_all(&config_home);
}
