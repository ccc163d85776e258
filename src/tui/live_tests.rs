//! Live mode in the App, without a cluster: updates come through a channel as the
//! watchers would send them, ticks apply them, and the screen is read on a TestBackend.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use jiff::Timestamp;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};

use super::action::Action;
use super::app::{App, Level, Mode};
use super::keymap::Keymap;
use super::live::LiveLink;
use super::theme::Theme;
use crate::framework::PodInfo;
use crate::recording::EventType;
use crate::session::{Actuator, ActuatorError, PodStatus, SessionOptions};
use kubestep_live::mirror::{InitialSync, Mirror, to_object};
use kubestep_live::{Change, LiveError, Update};

fn node(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": name},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
}

fn pod(name: &str, cpu: &str, held: bool) -> Value {
    let labels = if held {
        json!({"kubestep.io/approval": "manual"})
    } else {
        json!({})
    };
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "team", "uid": name, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]}})
}

fn change(event: EventType, object: Value, initial: bool) -> Change {
    let kind = match object["kind"].as_str() {
        Some("Node") => "Node",
        _ => "Pod",
    };
    Change {
        at: Timestamp::now(),
        event,
        kind,
        object,
        initial,
    }
}

/// What the actuator was asked to do.
#[derive(Clone, Default)]
struct Spy(Arc<Mutex<Vec<String>>>);

impl Spy {
    fn calls(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

impl Actuator for Spy {
    fn bind(&mut self, pod: &PodInfo, node: &str) -> Result<(), ActuatorError> {
        self.0
            .lock()
            .unwrap()
            .push(format!("bind {} {node}", pod.key));
        Ok(())
    }
    fn delete(&mut self, _v: &PodInfo, _p: &PodInfo, _node: &str) -> Result<(), ActuatorError> {
        Ok(())
    }
    fn nominate(&mut self, _pod: &PodInfo, _node: Option<&str>) -> Result<(), ActuatorError> {
        Ok(())
    }
    fn failed(&mut self, pod: &PodInfo, message: &str, _error: bool) {
        self.0
            .lock()
            .unwrap()
            .push(format!("failed {}: {message}", pod.key));
    }
    fn applies_locally(&self) -> bool {
        false
    }
}

/// A live App (running, as `kubestep live` starts) over `objects`, with the demo's
/// configuration (ManualApproval at Permit); the sender plays the watchers.
fn live_app(objects: Vec<Value>, shadow: bool, spy: &Spy) -> (App, mpsc::Sender<Update>) {
    let sync = InitialSync {
        objects: objects
            .into_iter()
            .filter_map(|v| to_object(&change(EventType::Added, v, true)).unwrap())
            .collect(),
        held: Vec::new(),
        notes: Vec::new(),
    };
    let cfg = kubestep_engine::config::parse_str(super::DEMO_CONFIG, "demo").unwrap();
    let opts = SessionOptions {
        start: Timestamp::now(),
        ..Default::default()
    };
    let mut mirror = Mirror::new(shadow, None);
    let session = mirror
        .start(sync, cfg, opts, Box::new(spy.clone()))
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let mut link = LiveLink::new(mirror, Box::new(rx), "https://cluster.test");
    if !shadow {
        link.scheduler_name = Some("default-scheduler".into());
    }
    let mut app = App::new(
        session,
        "live https://cluster.test",
        Theme::mono(),
        Keymap::default(),
    );
    app.live = Some(link);
    app.running = true;
    app.update(Action::Resize(120, 30));
    (app, tx)
}

fn tick(app: &mut App) {
    app.update(Action::Tick(Duration::from_millis(100)));
}

fn press(app: &mut App, keys: &str) {
    for c in keys.chars() {
        let k = match c {
            '\n' => KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE),
            c => KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE),
        };
        if let Some(a) = app.action_for_key(&k) {
            app.update(a);
        }
    }
}

fn screen(app: &App) -> String {
    let mut t = Terminal::new(TestBackend::new(app.size.0, app.size.1)).unwrap();
    t.draw(|f| super::draw::draw(f, app)).unwrap();
    t.backend().to_string()
}

#[test]
fn shadow_mode_follows_the_watch_and_shows_the_link() {
    let spy = Spy::default();
    let (mut app, tx) = live_app(vec![node("n1"), pod("web", "1", false)], true, &spy);
    tick(&mut app);
    let s = screen(&app);
    assert!(s.contains("▶ live shadow"), "{s}");
    assert!(s.contains("│ connected"), "{s}");
    assert!(s.contains("wall +"), "{s}");
    assert!(s.contains("team/web"), "{s}");

    // A pod arriving through the watch is explained too: too big for any node.
    tx.send(Update::Change(change(
        EventType::Added,
        pod("huge", "100", false),
        false,
    )))
    .unwrap();
    tick(&mut app);
    let huge = app.session.pod("team/huge").unwrap();
    assert_eq!(huge.status, PodStatus::Unschedulable);
    assert!(
        huge.message
            .as_deref()
            .unwrap_or_default()
            .contains("Insufficient cpu"),
        "{huge:?}"
    );
    let s = screen(&app);
    assert!(s.contains("team/huge"), "{s}");
    // Both stay listed while the cluster's scheduler has not bound them.
    let row = |pod: &str| app.queue.rows.iter().find(|r| r.pod == pod).cloned();
    let web = row("team/web").unwrap();
    assert_eq!(web.info, "kubestep picks n1", "{web:?}");
    let huge = row("team/huge").unwrap();
    assert!(huge.info.contains("Insufficient cpu"), "{huge:?}");

    // The link's state: a watch restarted after 410 Gone, then an RBAC denial.
    let gone = LiveError::Api {
        what: "watch pods (core/v1)".into(),
        message: "too old resource version (410 Gone)".into(),
    };
    tx.send(Update::Reconnecting {
        kind: "Pod",
        error: gone,
    })
    .unwrap();
    tick(&mut app);
    assert!(screen(&app).contains("re-listing Pod after 410 Gone"));
    assert_eq!(app.status.as_ref().map(|s| s.0), Some(Level::Warning));
    let denied = LiveError::Forbidden {
        verb: "watch".into(),
        resource: "nodes".into(),
        group_version: "core/v1".into(),
        scope: "at cluster scope".into(),
        said: String::new(),
    };
    tx.send(Update::Fatal(denied)).unwrap();
    tick(&mut app);
    let s = screen(&app);
    assert!(
        s.contains("missing permission: watch nodes (core/v1) at cluster scope"),
        "{s}"
    );
    assert_eq!(app.status.as_ref().map(|s| s.0), Some(Level::Error));
    // Nothing was ever written: the shadow actuator is not even asked.
    assert!(spy.calls().is_empty(), "{:?}", spy.calls());
    assert!(s.contains("Waiting at Permit 0 · simulated"), "{s}");
    assert!(s.contains("shadow mode holds nothing at Permit"), "{s}");
    // Quitting asks nothing: shadow mode holds nothing real.
    press(&mut app, "q");
    assert!(app.quit);
}

#[test]
fn active_mode_allow_binds_and_quit_rejects_the_rest() {
    let spy = Spy::default();
    let objects = vec![
        node("n1"),
        pod("first", "1", true),
        pod("second", "1", true),
    ];
    let (mut app, _tx) = live_app(objects, false, &spy);
    tick(&mut app);
    assert_eq!(app.session.waiting().len(), 2);
    let s = screen(&app);
    assert!(s.contains("▶ live active (default-scheduler)"), "{s}");
    assert!(!s.contains("simulated"), "{s}");

    // Allowing the first waiting pod binds it through the actuator at once.
    let first = app.waiting.rows[0].pod.clone();
    press(&mut app, "a");
    assert_eq!(spy.calls(), [format!("bind {first} n1")]);
    assert_eq!(app.session.waiting().len(), 1);

    // Quit asks first, naming what quitting does; then the other pod is rejected.
    press(&mut app, "q");
    assert_eq!(app.mode, Mode::ConfirmQuit);
    assert!(screen(&app).contains("quitting rejects them (\"kubestep is shutting down\")"));
    press(&mut app, "y");
    assert!(app.quit);
    let lines = app.live.as_mut().unwrap().shutdown(&mut app.session);
    assert_eq!(
        lines,
        ["rejected 1 pod(s) waiting at Permit: kubestep is shutting down"]
    );
    let calls = spy.calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(
        calls[1].ends_with("kubestep is shutting down."),
        "{calls:?}"
    );
    assert!(app.session.waiting().is_empty());
    assert!(app.session.parked().is_empty());
    let second = if first == "team/first" {
        "team/second"
    } else {
        "team/first"
    };
    assert_eq!(
        app.session.pod(second).unwrap().status,
        PodStatus::Unschedulable
    );
}

#[test]
fn shadow_mode_counts_parked_pods_as_awaiting_and_shows_a_cut_watch() {
    let spy = Spy::default();
    let objects = vec![
        node("n1"),
        pod("a", "1", false),
        pod("b", "1", false),
        pod("huge", "100", false),
    ];
    let (mut app, tx) = live_app(objects, true, &spy);
    tick(&mut app);
    // Two pods kubestep would bind wait for the cluster's scheduler; one fits nowhere.
    let c = app.session.counts();
    assert_eq!((c.unschedulable, c.awaiting), (1, 2), "{c:?}");
    let rows = &app.queue.rows;
    let marked = |state| rows.iter().filter(|r| r.state == state).count() as u32;
    assert_eq!(
        marked(crate::components::queue::pods::QState::Unschedulable),
        c.unschedulable
    );
    assert_eq!(
        marked(crate::components::queue::pods::QState::Deferred),
        c.awaiting
    );
    let s = screen(&app);
    // Shadow mode holds nothing at Permit: its waiting count gives way to awaiting.
    assert!(
        s.contains("unsched 1 awaiting 2 gated 0 bound 0")
            || s.contains("uns 1 aw 2 gate 0 bound 0"),
        "{s}"
    );

    // A watch cut under kube-rs: reconnecting until the server opens it again.
    let cut = LiveError::Api {
        what: "watch pods (core/v1)".into(),
        message: "the watch's connection was cut: error reading a body from connection".into(),
    };
    tx.send(Update::Reconnecting {
        kind: "Pod",
        error: cut,
    })
    .unwrap();
    tick(&mut app);
    let s = screen(&app);
    assert!(s.contains("│ reconnecting Pod"), "{s}");
    assert_eq!(app.status.as_ref().map(|s| s.0), Some(Level::Warning));
    tx.send(Update::Reconnected { kind: "Pod" }).unwrap();
    tick(&mut app);
    let s = screen(&app);
    assert!(s.contains("│ connected · reconnected Pod"), "{s}");
    assert!(
        app.status
            .as_ref()
            .is_some_and(|(_, t)| t == "Pod: watching again"),
        "{:?}",
        app.status
    );
}
