//! A pod parked inside PreBind (DynamicResources waiting for device binding conditions,
//! on by default from 1.36): the Waiting pane lists it apart from Permit's waits, no key
//! allows it, and a sprint stops there and runs on to its timeout when asked.

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::action::Action;
use super::app::App;
use super::keymap::Keymap;
use super::tests::{press, sprint};
use super::theme::Theme;
use crate::session::PodStatus;

const SCENE: &str = include_str!("../../tests/data/dra/binding-conditions.yaml");

fn app() -> App {
    use crate::cluster::{ClusterState, manifest};
    use kubestep_engine::features::{Features, KubeVersion};
    let (objs, _) = manifest::parse_str(SCENE, "scene.yaml").unwrap();
    let cluster = ClusterState::from_objects(objs).unwrap();
    let cfg =
        kubestep_engine::config::default_configuration_for(&Features::version(KubeVersion::V1_36));
    let session = crate::session::Session::new(
        cluster,
        cfg,
        Default::default(),
        Box::new(crate::session::LocalActuator),
    )
    .unwrap();
    let mut app = App::new(session, "scene", Theme::mono(), Keymap::default());
    app.update(Action::Resize(110, 32));
    app
}

fn screen(app: &App) -> String {
    let mut t = Terminal::new(TestBackend::new(app.size.0, app.size.1)).unwrap();
    t.draw(|f| super::draw::draw(f, app)).unwrap();
    t.backend().to_string()
}

#[test]
fn a_pre_bind_wait_is_listed_apart_and_no_key_ends_it() {
    let mut app = app();
    // A sprint stops where only the driver or the timeout can end the wait, and says so.
    let msg = sprint(&mut app);
    let says =
        "default/p1 waits at PreBind for device binding conditions (the first timeout in 10m";
    assert!(msg.contains(says), "{msg}");
    let r = app.session.record("default/p1").unwrap();
    assert_eq!(r.status, PodStatus::Waiting, "{r:?}");
    let s = screen(&app);
    assert!(s.contains("Waiting at Permit 0 · PreBind 1"), "{s}");
    assert!(s.contains("default/p1 DR PreBind 10m00s"), "{s}");
    press(&mut app, ":allow default/p1\n");
    let (_, msg) = app.status.clone().unwrap();
    assert!(msg.contains("waits at PreBind, not Permit"), "{msg}");
    assert_eq!(app.pods_waiting_pre_bind(), 1);

    // F again runs on through the timeout, as a headless run does: PreBind fails, the
    // pod is retried after its backoff (PostFilter deallocates the timed-out claim) and
    // waits anew, and the sprint stops there.
    let msg = sprint(&mut app);
    assert!(msg.contains(says), "{msg}");
    let timed_out = app.session.history.attempts.iter().any(|a| {
        a.message
            .as_deref()
            .is_some_and(|m| m.contains("device binding timeout"))
    });
    assert!(timed_out, "{msg}");
    let r = app.session.record("default/p1").unwrap();
    assert_eq!((r.status, r.attempts), (PodStatus::Waiting, 3), "{r:?}");
}

/// At a past step while the pod waited, the pane lists the wait as it stood then.
#[test]
fn a_past_step_lists_the_pre_bind_wait_of_then() {
    let mut app = app();
    press(&mut app, "f");
    // Another pod is scheduled while p1 waits; one step back, p1 still waited.
    let plain = "apiVersion: v1\nkind: Pod\nmetadata: {name: p2, namespace: default, uid: uid-p2}\nspec:\n  containers: [{name: main, image: x}]\n";
    let (objs, _) = crate::cluster::manifest::parse_str(plain, "p2.yaml").unwrap();
    for o in objs {
        app.session.apply(o.value);
    }
    press(&mut app, "f");
    press(&mut app, "[");
    let s = screen(&app);
    assert!(app.cursor.is_some(), "{s}");
    assert!(s.contains("Waiting at Permit 0 · PreBind 1"), "{s}");
    assert!(s.contains("default/p1 DR PreBind 10m00s"), "{s}");
}
