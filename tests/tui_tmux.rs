//! End to end: the real binary in a detached tmux session of fixed size, driven with
//! send-keys and read with capture-pane: on a fixed scene (step, continue until a pod
//! waits at Permit, approve it, open help, quit), and live against the loopback API
//! server (pending pods explained as they arrive, a watch re-listed, quit). Skipped (with
//! a message) when tmux is absent.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use support::apiserver::ApiServer;

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

    /// The screen with lines the terminal wrapped joined again (plain output, not a TUI).
    fn joined(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-J", "-t", &self.name]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn alive(&self) -> bool {
        self.run(&["has-session", "-t", &self.name])
            .status
            .success()
    }

    /// Waits until the screen shows `text`; the last screen in the failure message.
    fn wait_for(&self, text: &str) -> String {
        self.wait_all(&[text])
    }

    /// Waits until one screen shows every text at once. tmux can capture a frame half
    /// drawn, so what a test checks on a screen it waits for, never reads once.
    fn wait_all(&self, texts: &[&str]) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if texts.iter().all(|t| s.contains(t)) {
                // Once more a moment later, so what a test checks absent is not a leftover
                // of the frame before.
                std::thread::sleep(Duration::from_millis(50));
                let again = self.screen();
                if texts.iter().all(|t| again.contains(t)) {
                    return again;
                }
            }
            if start.elapsed() > Duration::from_secs(20) {
                panic!("screen never showed all of {texts:?}; it shows:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn tmux_missing() -> bool {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("SKIPPED tui_tmux: tmux is not installed (apt-get install tmux)");
        return true;
    }
    false
}

impl Tmux {
    /// Waits for the program in the session to end.
    fn wait_gone(&self) {
        let start = Instant::now();
        while self.alive() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(!self.alive(), "kubestep did not quit:\n{}", self.screen());
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
    if tmux_missing() {
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

    t.wait_all(&["Waiting at Permit 0", "⏸ paused", "shop/release-gate-0"]);

    // One step: the first pod is popped.
    t.keys(&["n"]);
    t.wait_all(&["QueueSort", "Cycle · attempt 1"]);

    // Continue: pods are scheduled until the ManualApproval pod waits at Permit.
    t.keys(&["c"]);
    t.wait_all(&["Waiting at Permit 1", " MA "]);
    t.keys(&["c"]);
    t.wait_for("paused");

    // Approve it: it binds at once.
    t.keys(&["a"]);
    t.wait_all(&[
        "allowed by ManualApproval",
        "Waiting at Permit 0",
        "Bound on",
    ]);

    // Help, generated from the keymap: in columns, scrolling with its position shown,
    // every key reachable, and searchable with /.
    t.keys(&["?"]);
    t.wait_all(&["Help", "step one plugin", "lines 1–"]);
    t.keys(&["G"]);
    t.wait_all(&["Command line (:)", "NS/NAME [PLUGIN] [MESSAGE]"]);
    t.keys(&["/", "r", "e", "j", "e", "c", "t"]);
    let s = t.wait_all(&["search / reject", "reject the selected waiting pod"]);
    assert!(!s.contains("step one plugin"), "{s}");
    // One Escape at a time: two sent together can arrive as one Alt-Escape.
    t.keys(&["Escape"]);
    t.wait_for("step one plugin");
    t.keys(&["Escape"]);
    t.wait_for("Waiting at Permit 0");

    // Quit: nothing waits, so no question; the session ends.
    t.keys(&["q"]);
    t.wait_gone();
    let _ = std::fs::remove_dir_all(&config_home);
}

/// `kubestep` alone, at 80x24 as a first-time user opens it: no warnings about the demo's
/// own data (notes go to Logs), a status line that says how to start, and help reachable.
#[test]
fn first_screen_in_tmux() {
    if tmux_missing() {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_kubestep");
    let home = std::env::temp_dir().join(format!("kubestep-tmux-first-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&home);
    let t = Tmux {
        name: format!("kubestep-first-{}", std::process::id()),
    };
    let xdg = format!("XDG_CONFIG_HOME={}", home.display());
    let out = t.run(&[
        "new-session",
        "-d",
        "-s",
        &t.name,
        "-x",
        "80",
        "-y",
        "24",
        "-e",
        &xdg,
        bin,
    ]);
    assert!(out.status.success(), "tmux new-session: {out:?}");
    let s = t.wait_for("? help");
    assert!(!s.contains('⚠'), "{s}");
    assert!(!s.contains("PriorityClass"), "{s}");
    assert!(!s.contains("more in Logs"), "{s}");
    // The notes are in Logs for whoever looks.
    t.keys(&["6"]);
    t.wait_for("NOTE  Pod");
    // Help fits 80x24 by scrolling.
    t.keys(&["?"]);
    t.wait_all(&["↓ more", "lines 1–"]);
    t.keys(&["Escape"]);
    // Esc and q read together would be Alt+q: let the help close first.
    let start = Instant::now();
    while t.screen().contains("↓ more") && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    t.keys(&["q"]);
    t.wait_gone();
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn live_shadow_mode_in_tmux() {
    if tmux_missing() {
        return;
    }
    let node = |name: &str, cpu: &str| {
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}})
    };
    let pod = |name: &str, cpu: &str| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "team"},
            "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]}})
    };
    let server = ApiServer::start();
    server.apply(node("n1", "4"));
    server.apply(node("n2", "2"));
    server.apply(pod("fits", "3"));
    server.apply(pod("huge", "100"));
    let home = std::env::temp_dir().join(format!("kubestep-tmux-live-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&home);
    let kc = server.write_kubeconfig(&home, None);
    let t = Tmux {
        name: format!("kubestep-live-{}", std::process::id()),
    };
    let xdg = format!("XDG_CONFIG_HOME={}", home.display());
    let bin = env!("CARGO_BIN_EXE_kubestep");
    let kc = kc.display().to_string();
    let out = t.run(&[
        "new-session",
        "-d",
        "-s",
        &t.name,
        "-x",
        "120",
        "-y",
        "32",
        "-e",
        &xdg,
        "-e",
        "KUBECONFIG=",
        bin,
        "live",
        "--kubeconfig",
        &kc,
    ]);
    assert!(out.status.success(), "tmux new-session: {out:?}");

    t.wait_all(&["▶ live shadow", "connected", "wall +"]);
    t.wait_all(&[
        "kubestep picks n1",
        "team/fits",
        "team/huge",
        "Waiting at Permit 0 · simulated",
    ]);

    // The unschedulable pod comes first in the queue: its latest step, then why.
    t.keys(&["Enter"]);
    t.keys(&["4"]);
    t.wait_all(&["Insufficient cpu", "0/2 nodes are available"]);

    // A pod created now appears; a watch ended by 410 Gone is re-listed.
    server.apply(pod("late", "1"));
    t.wait_for("team/late");
    server.expire_watches();
    t.wait_for("re-listed");

    t.keys(&["q"]);
    t.wait_gone();
    assert!(server.writes().is_empty(), "{:?}", server.writes());
    let _ = std::fs::remove_dir_all(&home);
}

/// A terminal that goes away without a SIGHUP reaching kubestep (tmux's server killed)
/// ends the TUI as `q` does, instead of leaving it running unseen.
#[test]
fn closed_terminal_ends_the_tui() {
    if tmux_missing() {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_kubestep");
    // A server of its own: killing it must not touch the other tests' sessions.
    let socket = format!("kubestep-hangup-{}", std::process::id());
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .args(["-L", &socket])
            .args(args)
            .output()
            .expect("running tmux")
    };
    let home = std::env::temp_dir().join(format!("kubestep-tmux-hup-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&home);
    let xdg = format!("XDG_CONFIG_HOME={}", home.display());
    let pidfile = home.join("pid");
    let script = format!("echo $$ > {}; exec {bin}", pidfile.display());
    let out = tmux(&[
        "new-session",
        "-d",
        "-x",
        "100",
        "-y",
        "30",
        "-e",
        &xdg,
        "sh",
        "-c",
        &script,
    ]);
    assert!(out.status.success(), "tmux new-session: {out:?}");
    let start = Instant::now();
    loop {
        let s = tmux(&["capture-pane", "-p"]);
        if String::from_utf8_lossy(&s.stdout).contains("? help") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the TUI never drew"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .expect("pid file")
        .trim()
        .parse()
        .expect("a pid");
    let _ = tmux(&["kill-server"]);
    let alive = || std::path::Path::new(&format!("/proc/{pid}")).exists() && !zombie(pid);
    let start = Instant::now();
    while alive() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let still = alive();
    if still {
        // SAFETY: kill with a pid we started; nothing else is touched.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(!still, "kubestep kept running after its terminal closed");
    let _ = std::fs::remove_dir_all(&home);
}

fn zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

/// `kubestep live` whose first lists never complete (pods answer 500): q, and Ctrl-C,
/// end it within a second or two, with the kinds still awaited named; the terminal is
/// left in its normal mode.
#[test]
fn q_and_ctrl_c_quit_live_mode_during_the_first_lists_in_tmux() {
    if tmux_missing() {
        return;
    }
    use support::apiserver::ListFault;
    for (key, said) in [
        (
            "q",
            "q pressed: stopped before the first list of every kind arrived",
        ),
        (
            "C-c",
            "SIGINT received: stopped before the first list of every kind arrived",
        ),
    ] {
        let server = ApiServer::start();
        server.apply(
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}),
        );
        server.fail_lists(Some(ListFault::InternalError), &["pods"]);
        let home = std::env::temp_dir().join(format!(
            "kubestep-tmux-sync-{}-{}",
            std::process::id(),
            key.len()
        ));
        let _ = std::fs::create_dir_all(&home);
        let kc = server.write_kubeconfig(&home, None);
        let t = Tmux {
            name: format!("kubestep-sync-{}-{}", std::process::id(), key.len()),
        };
        let xdg = format!("XDG_CONFIG_HOME={}", home.display());
        // The shell stays to show how kubestep ended and whether the terminal echoes.
        let script = format!(
            "KUBECONFIG= {} live --kubeconfig {}; echo EXIT=$?; stty -a | grep -o ' -\\?icanon'; sleep 60",
            env!("CARGO_BIN_EXE_kubestep"),
            kc.display()
        );
        let out = t.run(&[
            "new-session",
            "-d",
            "-s",
            &t.name,
            "-x",
            "160",
            "-y",
            "30",
            "-e",
            &xdg,
            "bash",
            "-c",
            &script,
        ]);
        assert!(out.status.success(), "tmux new-session: {out:?}");
        t.wait_all(&[
            "Pod: reconnecting after error",
            "connecting to http://127.0.0.1",
            "(q quits)",
        ]);
        let pressed = Instant::now();
        t.keys(&[key]);
        t.wait_for("EXIT=");
        assert!(
            pressed.elapsed() < Duration::from_secs(3),
            "{key} took {:?}",
            pressed.elapsed()
        );
        // The message may wrap (more kinds are still listing on a busy machine): read
        // wrapped lines joined.
        let s = t.joined();
        assert!(s.contains("EXIT=2"), "{s}");
        assert!(s.contains(said), "{s}");
        // Pod at least (other kinds may still be listing), with its last error.
        assert!(s.contains("still waiting for "), "{s}");
        assert!(s.contains("(last errors: Pod: list pods (core/v1)"), "{s}");
        // Line mode is back for the shell.
        let s = t.wait_all(&["icanon", " icanon"]);
        assert!(!s.contains("-icanon"), "{s}");
        let _ = std::fs::remove_dir_all(&home);
    }
}

/// The live TUI when the connections under its watches are cut (kube-rs opens new watches
/// on its own): the header and the status line say so, then that the watches are back.
#[test]
fn live_tui_shows_a_cut_watch_in_tmux() {
    if tmux_missing() {
        return;
    }
    let server = ApiServer::start();
    server.apply(
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}),
    );
    let home = std::env::temp_dir().join(format!("kubestep-tmux-cut-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&home);
    let kc = server.write_kubeconfig(&home, None);
    let t = Tmux {
        name: format!("kubestep-cut-{}", std::process::id()),
    };
    let xdg = format!("XDG_CONFIG_HOME={}", home.display());
    let kc = kc.display().to_string();
    let out = t.run(&[
        "new-session",
        "-d",
        "-s",
        &t.name,
        "-x",
        "140",
        "-y",
        "32",
        "-e",
        &xdg,
        "-e",
        "KUBECONFIG=",
        env!("CARGO_BIN_EXE_kubestep"),
        "live",
        "--kubeconfig",
        &kc,
    ]);
    assert!(out.status.success(), "tmux new-session: {out:?}");
    t.wait_for("▶ live shadow");
    server.wait_until("every kind watched", Duration::from_secs(20), |s| {
        s.open_watches() >= 13
    });
    server.drop_connections();
    t.wait_all(&[
        "reconnected",
        "│ connected · reconnected ",
        "watching again",
    ]);
    t.keys(&["q"]);
    t.wait_gone();
    let _ = std::fs::remove_dir_all(&home);
}

/// `kubestep live --active` in the terminal UI with three pods waiting at Permit and a
/// server that hangs every write: q rejects them within one shutdown deadline and says
/// what was not written, once the terminal is restored.
#[test]
fn live_tui_shutdown_writes_share_one_deadline_in_tmux() {
    if tmux_missing() {
        return;
    }
    let server = ApiServer::start();
    server.apply(
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}),
    );
    for p in ["held-a", "held-b", "held-c"] {
        server.apply(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": p, "namespace": "team", "labels": {"kubestep.io/approval": "manual"}},
            "spec": {"schedulerName": "kubestep", "containers": [{"name": "c", "image": "nginx"}]}}));
    }
    let home = std::env::temp_dir().join(format!("kubestep-tmux-down-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&home);
    let kc = server.write_kubeconfig(&home, None);
    let cfg = home.join("scheduler.yaml");
    std::fs::write(
        &cfg,
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: kubestep\n  plugins:\n    permit:\n      enabled:\n      - name: ManualApproval\n",
    )
    .expect("config");
    let t = Tmux {
        name: format!("kubestep-down-{}", std::process::id()),
    };
    let xdg = format!("XDG_CONFIG_HOME={}", home.display());
    let script = format!(
        "KUBECONFIG= {} live --active --scheduler-name kubestep --kubeconfig {} --config {}; echo EXIT=$?; sleep 60",
        env!("CARGO_BIN_EXE_kubestep"),
        kc.display(),
        cfg.display()
    );
    let out = t.run(&[
        "new-session",
        "-d",
        "-s",
        &t.name,
        "-x",
        "160",
        "-y",
        "40",
        "-e",
        &xdg,
        "bash",
        "-c",
        &script,
    ]);
    assert!(out.status.success(), "tmux new-session: {out:?}");
    t.wait_for("waiting 3");
    // The writes of the binding cycles (nominations) are answered first.
    let writes = server.writes().len();
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(server.writes().len(), writes, "writes still coming");
    server.hang_writes(true);
    // Quitting with pods waiting asks first.
    t.keys(&["q"]);
    t.keys(&["y"]);
    t.wait_for("EXIT=");
    // Plain output after the TUI: a long line may wrap.
    let s = t.joined();
    assert!(s.contains("EXIT=0"), "{s}");
    assert!(s.contains("rejected 3 pod(s) waiting at Permit"), "{s}");
    assert!(s.contains("shutdown: 0 of "), "{s}");
    assert!(s.contains("the 5s shutdown deadline passed"), "{s}");
    let _ = std::fs::remove_dir_all(&home);
}

/// The fixed scene of `demo_in_tmux` written under `dir`: (scene, scheduler config).
fn write_scene(dir: &std::path::Path) -> (String, String) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
    let scene = dir.join("scene.yaml");
    let text = format!(
        "{}\n---\n{}",
        read("recordings/example-cluster.yaml"),
        read("src/tui/demo-approval.yaml")
    );
    std::fs::write(&scene, text).unwrap();
    let cfg = dir.join("scheduler.yaml");
    std::fs::write(&cfg, read("src/tui/demo-config.yaml")).unwrap();
    (scene.display().to_string(), cfg.display().to_string())
}

/// Keys as tmux delivers them: h/l and ←/→ move across the Filter matrix's columns,
/// Shift-←/→ and Alt-←/→ (and [ ]) travel in time; help finds "approve"; the Logs tab
/// follows; and with `step = "N"` in the config the hints say N.
#[test]
fn grid_keys_time_travel_and_remapped_hints_in_tmux() {
    if tmux_missing() {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_kubestep");
    let home = std::env::temp_dir().join(format!("kubestep-tmux-keys-{}", std::process::id()));
    let _ = std::fs::create_dir_all(home.join("kubestep"));
    std::fs::write(home.join("kubestep/config.toml"), "[keys]\nstep = \"N\"\n").unwrap();
    let (scene, cfg) = write_scene(&home);
    let t = Tmux {
        name: format!("kubestep-keys-{}", std::process::id()),
    };
    let xdg = format!("XDG_CONFIG_HOME={}", home.display());
    let out = t.run(&[
        "new-session",
        "-d",
        "-s",
        &t.name,
        "-x",
        "110",
        "-y",
        "32",
        "-e",
        &xdg,
        bin,
        "tui",
        &scene,
        "--config",
        &cfg,
    ]);
    assert!(out.status.success(), "tmux new-session: {out:?}");
    // The remapped key in every hint.
    let s = t.wait_all(&[
        "N step · c run · ? help",
        "no step yet: press N",
        "press N to step the first pod",
    ]);
    assert!(!s.contains("press n"), "{s}");

    // Into the first pod's Filter: the matrix's selected cell names its plugin.
    t.keys(&["N", "N", "N"]);
    t.wait_for("· NodeUnschedulable:");
    t.keys(&["l"]);
    t.wait_for("· NodeName:");
    t.keys(&["Right"]);
    let s = t.wait_for("· TaintToleration:");
    assert!(!s.contains('⏪'), "columns moved, not time:\n{s}");
    t.keys(&["h"]);
    t.wait_for("· NodeName:");
    t.keys(&["Left"]);
    t.wait_for("· NodeUnschedulable:");

    // Time travel on Shift- and Alt-arrows, as tmux sends them: the header's
    // "⏪ step SHOWN/LAST".
    let shown = |s: &str| -> (u64, u64) {
        let at = s.find("⏪ step ").expect("travelling") + "⏪ step ".len();
        let (a, b) = s[at..].split_once('/').unwrap();
        let b: String = b.chars().take_while(char::is_ascii_digit).collect();
        (a.parse().unwrap(), b.parse().unwrap())
    };
    t.keys(&["S-Left"]);
    let (a, last) = shown(&t.wait_for("⏪ step "));
    assert_eq!(a, last - 1);
    t.keys(&["M-Left"]);
    t.wait_for(&format!("⏪ step {}/{last}", last - 2));
    t.keys(&["S-Right"]);
    t.wait_for(&format!("⏪ step {}/{last}", last - 1));
    t.keys(&["M-Right"]);
    let start = Instant::now();
    while t.screen().contains('⏪') && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!t.screen().contains('⏪'), "{}", t.screen());
    t.keys(&["["]);
    t.wait_for(&format!("⏪ step {}/{last}", last - 1));
    t.keys(&["]"]);

    // Help's search by a synonym.
    t.keys(&["?"]);
    t.wait_for("Help");
    t.keys(&["/", "a", "p", "p", "r", "o", "v", "e"]);
    t.wait_all(&["search / approve", "(also: approve)"]);
    t.keys(&["Escape"]);
    t.wait_for("step one plugin");
    t.keys(&["Escape"]);
    let start = Instant::now();
    while t.screen().contains("step one plugin") && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }

    // Logs: each line once, without module paths; scrolled up it says how to follow.
    t.keys(&["6"]);
    let s = t.wait_for("INFO  ");
    assert!(!s.contains("kubestep_tui::"), "{s}");
    // More lines than the pane holds: each step logs one; the last ones find nothing to
    // schedule (a pod waits at Permit).
    t.keys(&["N"; 30]);
    t.wait_for("nothing to schedule now");
    t.keys(&["g"]);
    t.wait_for("G follows new lines");
    t.keys(&["G"]);
    let start = Instant::now();
    while t.screen().contains("G follows new lines") && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !t.screen().contains("G follows new lines"),
        "{}",
        t.screen()
    );
    // h/l where no grid is: where time travel went.
    t.keys(&["l"]);
    t.wait_for("h l move across columns in the Filter and Scores tabs; [ ] travel in time");

    // The steps above left a pod waiting at Permit: quitting asks first.
    t.keys(&["q"]);
    t.wait_for("Quit anyway? (y/N)");
    t.keys(&["y"]);
    t.wait_gone();
    let _ = std::fs::remove_dir_all(&home);
}
