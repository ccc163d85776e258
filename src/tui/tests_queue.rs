//! The Queue pane lists the pods still to decide; `d` lists the bound ones too. Filter,
//! sort and time travel follow what is listed.

use super::app::App;
use super::components::queue::pods::QState;
use super::tests::{demo_app, press, screen};
use crate::session::PodStatus;

fn bound(app: &App) -> usize {
    app.session
        .records()
        .values()
        .filter(|r| r.status == PodStatus::Bound)
        .count()
}

fn listed(app: &App) -> Vec<String> {
    app.queue
        .order
        .iter()
        .map(|&i| app.queue.rows[i].pod.clone())
        .collect()
}

#[test]
fn the_queue_lists_the_pods_still_to_decide() {
    let mut app = demo_app();
    let b = bound(&app);
    assert!(b > 0, "the scene starts with running pods");
    assert!(app.queue.rows.iter().all(|r| r.state != QState::Bound));
    let pending = app.queue.rows.len();
    assert_eq!(pending + b, app.session.records().len());
    let s = screen(&mut app);
    assert!(
        s.contains(&format!(" Queue {pending}, {b} bound hidden (d) ")),
        "{s}"
    );
    assert!(!s.contains("✓ ml/feature-store-0"), "{s}");
}

#[test]
fn d_lists_the_bound_pods_and_filter_and_sort_follow_what_is_listed() {
    let mut app = demo_app();
    let (b, pending) = (bound(&app), app.queue.rows.len());
    press(&mut app, "d");
    assert_eq!(app.queue.rows.len(), pending + b);
    let s = screen(&mut app);
    assert!(
        s.contains(&format!(" Queue {} incl. {b} bound (d) ", pending + b)),
        "{s}"
    );
    assert!(s.contains("✓ ml/feature-store-0"), "{s}");
    // The filter works on what is listed: a bound pod while they are listed, nothing
    // once they are hidden again (and the pane says where it went).
    press(&mut app, "/feature\n");
    assert_eq!(listed(&app), ["ml/feature-store-0"]);
    assert!(screen(&mut app).contains(&format!(" Queue 1/{} incl.", pending + b)));
    press(&mut app, "d");
    assert!(listed(&app).is_empty());
    let s = screen(&mut app);
    assert!(s.contains("no pod to decide matches the filter (d"), "{s}");
    assert!(
        s.contains(&format!(" Queue 0/{pending}, {b} bound hidden")),
        "{s}"
    );
    // The sort too: by name, the pending pods alone.
    press(&mut app, "\x1bo");
    let names = listed(&app);
    assert_eq!(names.len(), pending);
    assert!(names.windows(2).all(|w| w[0] <= w[1]), "{names:?}");
    assert!(screen(&mut app).contains("bound hidden (d) by name "));
    // The selected pod stays selected across the toggle.
    press(&mut app, "j");
    let sel = app.selected_queue_row().unwrap().pod.clone();
    press(&mut app, "d");
    assert_eq!(app.selected_queue_row().unwrap().pod, sel);
}

/// The pod of the first step in history.
fn first_pod(app: &App) -> String {
    let first = app
        .session
        .history
        .steps
        .front()
        .and_then(|s| s.pod.clone());
    first.expect("a step with a pod").to_string()
}

#[test]
fn pods_leave_the_queue_as_they_bind() {
    let mut app = demo_app();
    press(&mut app, "f");
    let first = first_pod(&app);
    assert_eq!(app.session.records()[&first].status, PodStatus::Bound);
    assert!(!app.queue.rows.iter().any(|r| r.pod == first));
    let b = bound(&app);
    assert!(screen(&mut app).contains(&format!(", {b} bound hidden (d)")));
}

#[test]
fn a_past_step_lists_the_pods_to_decide_then() {
    let mut app = demo_app();
    let b = bound(&app);
    press(&mut app, "ff");
    let first = first_pod(&app);
    assert_eq!(app.session.records()[&first].status, PodStatus::Bound);
    // Back to the first pod's first step: it was in flight, not bound yet.
    while app.cursor != app.session.history.steps.front().map(|s| s.seq) {
        press(&mut app, "[");
    }
    assert!(app.queue.past.is_some());
    assert!(app.queue.rows.iter().all(|r| r.state != QState::Bound));
    assert!(app.queue.rows.iter().any(|r| r.pod == first));
    let s = screen(&mut app);
    assert!(
        s.contains(&format!(", {b} bound hidden (d) ⏪ step")),
        "{s}"
    );
    // `d` there lists the pods bound then, not those bound since.
    press(&mut app, "d");
    let then: Vec<&str> = app
        .queue
        .rows
        .iter()
        .filter(|r| r.state == QState::Bound)
        .map(|r| r.pod.as_str())
        .collect();
    assert_eq!(then.len(), b);
    assert!(!then.contains(&first.as_str()));
}

#[test]
fn the_title_gives_way_in_a_narrow_pane_the_key_first() {
    use super::components::queue::QueuePane;
    use super::components::queue::draw::title;
    let rows = |n: usize, state: QState| {
        (0..n)
            .map(|i| super::components::queue::pods::QueueRow {
                pod: format!("batch/job-{i:05}-{state:?}"),
                state,
                info: String::new(),
                attempts: 0,
            })
            .collect::<Vec<_>>()
    };
    // 300 pending, 60,000 bound hidden (a production cluster's shape).
    let mut q = QueuePane::default();
    q.bound = 60_000;
    q.rows = rows(300, QState::Active);
    q.refresh_order();
    assert_eq!(title(&q, "d", 80), " Queue 300, 60000 bound hidden (d) ");
    assert_eq!(title(&q, "d", 32), " Queue 300 +60000 bound (d) ");
    assert_eq!(title(&q, "d", 24), " Queue 300 +60000 bound ");
    // 100 pending and 200 bound, listed.
    q.show_bound = true;
    q.bound = 200;
    q.rows = rows(100, QState::Active);
    q.rows.extend(rows(200, QState::Bound));
    q.refresh_order();
    assert_eq!(title(&q, "d", 80), " Queue 300 incl. 200 bound (d) ");
    assert_eq!(title(&q, "d", 26), " Queue 300 (200 bound) ");
    // Nothing bound, nothing hidden: the count alone.
    q.show_bound = false;
    q.bound = 0;
    q.rows.truncate(100);
    q.refresh_order();
    assert_eq!(title(&q, "d", 80), " Queue 100 ");
}
