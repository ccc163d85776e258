//! Whole-app tests: the real App on ratatui's TestBackend, keys sent in, screens compared
//! with insta snapshots (as gitui does), and state transitions checked directly. The
//! session runs on its virtual clock; wall-clock step durations are zeroed before drawing.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;

use super::action::{Action, Pane, Tab};
use super::app::App;
use super::keymap::Keymap;
use super::theme::{self, Theme};
use crate::session::PodStatus;

/// Keys and panes as k9s / lazygit / vim users expect them (issue 26).
#[path = "tests_keys.rs"]
mod keys;

const W: u16 = 110;
const H: u16 = 32;

const GATE: &str = "shop/release-gate-0";
const TRAINER: &str = "ml/trainer-llm-0";
const CHECKOUT: &str = "shop/checkout-7d9f6c8b5-w8r2t";

fn demo_app_with(theme: Theme) -> App {
    let session = super::example_session().unwrap();
    let mut app = App::new(session, "demo (stand-in)", theme, Keymap::default());
    app.update(Action::Resize(W, H));
    app
}

pub(crate) fn demo_app() -> App {
    demo_app_with(Theme::mono())
}

fn key(c: char) -> KeyEvent {
    let m = if c.is_ascii_uppercase() {
        KeyModifiers::SHIFT
    } else {
        KeyModifiers::NONE
    };
    KeyEvent::new(KeyCode::Char(c), m)
}

/// Types `keys` as a person would (`\n` is Enter, `\t` Tab, `\x1b` Esc).
pub(crate) fn press(app: &mut App, keys: &str) {
    for c in keys.chars() {
        let k = match c {
            '\n' => KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE),
            '\t' => KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE),
            '\x1b' => KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE),
            c => key(c),
        };
        if let Some(a) = app.action_for_key(&k) {
            app.update(a);
        }
    }
}

/// Applies the background worker's results until none is outstanding (blocking on the
/// worker, not on a clock).
pub(crate) fn settle(app: &mut App) {
    while let Some(a) = app.background.wait_next() {
        app.update(a);
    }
}

fn terminal(app: &mut App) -> Terminal<TestBackend> {
    let zero = std::time::Duration::ZERO;
    for s in app.session.history.steps.iter_mut() {
        s.duration = zero;
    }
    for a in app.session.history.attempts.iter_mut() {
        std::sync::Arc::make_mut(a).pre_enqueue = zero;
    }
    for a in app.session.open_attempts_mut() {
        a.qpi.pre_enqueue = zero;
    }
    let mut t = Terminal::new(TestBackend::new(app.size.0, app.size.1)).unwrap();
    t.draw(|f| super::draw::draw(f, app)).unwrap();
    t
}

pub(crate) fn screen(app: &mut App) -> String {
    terminal(app).backend().to_string()
}

/// Finishes pods until `pod` waits at Permit.
fn until_waiting(app: &mut App, pod: &str) {
    for _ in 0..10 {
        if app.session.record(pod).map(|r| r.status) == Some(PodStatus::Waiting) {
            return;
        }
        press(app, "f");
    }
    panic!("{pod} never waited");
}

#[test]
fn start_screen() {
    let mut app = demo_app();
    insta::assert_snapshot!(screen(&mut app));
}

#[test]
fn filter_matrix_after_steps() {
    let mut app = demo_app();
    press(&mut app, "nnn");
    assert_eq!(app.tab, Tab::Filter);
    insta::assert_snapshot!(screen(&mut app));
}

#[test]
fn scores_weighted_and_raw() {
    let mut app = demo_app();
    press(&mut app, "f2");
    insta::assert_snapshot!("scores_weighted", screen(&mut app));
    press(&mut app, "v");
    insta::assert_snapshot!("scores_raw", screen(&mut app));
}

#[test]
fn cycle_state_tree() {
    let mut app = demo_app();
    press(&mut app, "nnnn3");
    assert_eq!(app.focus, Pane::Main);
    // Open the first entry (selected from the start).
    press(&mut app, "\n");
    insta::assert_snapshot!(screen(&mut app));
}

#[test]
fn waiting_pod_allow() {
    let mut app = demo_app();
    until_waiting(&mut app, GATE);
    insta::assert_snapshot!("waiting_before_allow", screen(&mut app));
    assert_eq!(app.waiting.rows.len(), 1);
    press(&mut app, "a");
    let r = &app.session.records()[GATE];
    assert_eq!(r.status, PodStatus::Bound, "{r:?}");
    assert!(app.waiting.rows.is_empty());
    insta::assert_snapshot!("waiting_after_allow", screen(&mut app));
}

#[test]
fn waiting_pod_reject_with_message() {
    let mut app = demo_app();
    until_waiting(&mut app, GATE);
    press(&mut app, "rnot today\n");
    let r = &app.session.records()[GATE];
    assert_eq!(r.status, PodStatus::Unschedulable, "{r:?}");
    assert!(
        r.message.as_deref().unwrap_or("").contains("not today"),
        "{r:?}"
    );
    assert!(app.session.waiting().is_empty());
    insta::assert_snapshot!("waiting_after_reject", screen(&mut app));
}

#[test]
fn explain_unschedulable_pod_with_hints() {
    let mut app = demo_app();
    press(&mut app, "ff");
    press(&mut app, &format!("p{TRAINER}\n4"));
    settle(&mut app);
    let c = app.tabs.explain.cache.as_ref().unwrap();
    assert_eq!(c.pod, TRAINER);
    assert!(
        c.outcome
            .as_ref()
            .unwrap()
            .hints
            .iter()
            .any(|h| h.text.contains("toleration nvidia.com/gpu")),
        "{:?}",
        c.outcome
    );
    insta::assert_snapshot!(screen(&mut app));
}

#[test]
fn explain_computes_in_the_background_and_the_app_stays_responsive() {
    let mut app = demo_app();
    let gate = std::sync::Arc::new(super::background::Gate::default());
    app.background.gate = Some(gate.clone());
    press(&mut app, "ff");
    press(&mut app, &format!("p{TRAINER}\n4"));
    // The worker holds the job: the pane says so, and keys still work meanwhile.
    let s = screen(&mut app);
    assert!(s.contains("computing hints…"), "{s}");
    assert!(app.tabs.explain.cache.as_ref().unwrap().outcome.is_none());
    insta::assert_snapshot!("explain_computing", s);
    press(&mut app, "jj");
    assert_eq!(app.tabs.explain.scroll, 2);
    press(&mut app, "gk");
    assert_eq!(app.tabs.explain.scroll, 0);
    // Released: the result arrives as an action and is drawn.
    gate.open();
    settle(&mut app);
    // How close the nodes came, then the hints, further down the pane.
    press(&mut app, "jjjjjjjjjjjj");
    let s = screen(&mut app);
    assert!(s.contains("How close the rejected nodes came:"), "{s}");
    press(&mut app, "jjjjjjjjjj");
    let s = screen(&mut app);
    assert!(!s.contains("computing hints…"), "{s}");
    assert!(s.contains("✓ would fit"), "{s}");
    insta::assert_snapshot!("explain_computed", s);
}

#[test]
fn a_stale_explanation_is_dropped() {
    let mut app = demo_app();
    let gate = std::sync::Arc::new(super::background::Gate::default());
    app.background.gate = Some(gate.clone());
    press(&mut app, "ff");
    press(&mut app, &format!("p{TRAINER}\n4"));
    let first = app.tabs.explain.cache.as_ref().unwrap().job;
    // Another pod before the first answer: the first answer no longer matters.
    press(&mut app, &format!("p{CHECKOUT}\n4"));
    let c = app.tabs.explain.cache.as_ref().unwrap();
    assert_eq!(c.pod, CHECKOUT);
    assert_ne!(c.job, first);
    gate.open();
    settle(&mut app);
    let c = app.tabs.explain.cache.as_ref().unwrap();
    assert_eq!(c.pod, CHECKOUT);
    let e = c.outcome.as_ref().unwrap().result.as_ref().unwrap();
    assert_eq!(e.pod, CHECKOUT);
    // An answer to the old job, arriving late, changes nothing.
    let late = crate::components::tabs::explain::worker::ExplainDone {
        job: first,
        outcome: crate::components::tabs::explain::worker::Explained {
            result: Err("late".into()),
            hints: Vec::new(),
        },
    };
    app.update(Action::Explained(Box::new(late)));
    assert!(
        app.tabs
            .explain
            .cache
            .as_ref()
            .unwrap()
            .outcome
            .as_ref()
            .unwrap()
            .result
            .is_ok()
    );
}

#[test]
fn help_is_generated_from_the_keymap() {
    let mut app = demo_app();
    press(&mut app, "?");
    let s = screen(&mut app);
    assert!(s.contains("step: finish the current"), "{s}");
    insta::assert_snapshot!(s);
    // The what-if field keys are in it too.
    let help = app.keymap.help();
    assert!(
        help.iter()
            .any(|(k, d)| k == "e" && d.contains("edit a pod or node field")),
        "{help:?}"
    );
    assert!(
        help.iter()
            .any(|(k, d)| k == "u" && d.contains("undo the last field edit"))
    );
    press(&mut app, "\x1b");
    assert_eq!(app.mode, super::app::Mode::Normal);
}

/// Every screen help shows while scrolled from the top to the end (`j` until it stops).
fn help_screens(app: &mut App) -> Vec<String> {
    press(app, "?");
    let mut screens = vec![screen(app)];
    for _ in 0..200 {
        let before = app.mode.clone();
        press(app, "j");
        if app.mode == before {
            break;
        }
        screens.push(screen(app));
    }
    screens
}

/// The first words of a command's description: always on its first line in help.
fn first_words(c: super::action::Command) -> String {
    c.describe()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn help_shows_every_key_at_every_size_by_scrolling() {
    for (w, h) in [(80, 24), (100, 30), (160, 48), (220, 60)] {
        let mut app = demo_app();
        app.update(Action::Resize(w, h));
        let screens = help_screens(&mut app);
        let all = screens.join("\n");
        for c in super::action::Command::ALL {
            let keys = app.keymap.label(c);
            assert!(
                all.lines()
                    .any(|l| l.contains(&keys) && l.contains(&first_words(c))),
                "{w}x{h}: {} ({keys}) never shown in help:\n{all}",
                c.name()
            );
        }
        for group in super::action::Command::GROUPS {
            assert!(all.contains(group), "{w}x{h}: group {group} missing");
        }
        assert!(all.contains("NS/NAME [PLUGIN] [MESSAGE]"), "{w}x{h}");
        assert!(all.contains("upstream's first failure"), "{w}x{h}");
        // Where it scrolls, the border says where the view is and that more follows.
        if screens.len() > 1 {
            assert!(screens[0].contains("lines 1–"), "{w}x{h}:\n{}", screens[0]);
            assert!(screens[0].contains("↓ more"), "{w}x{h}:\n{}", screens[0]);
            let last = screens.last().unwrap();
            assert!(last.contains(" ↑ "), "{w}x{h}:\n{last}");
        }
    }
}

#[test]
fn help_at_80x24_scrolls_with_a_position() {
    let mut app = demo_app();
    app.update(Action::Resize(80, 24));
    press(&mut app, "?");
    insta::assert_snapshot!("help_80x24_top", screen(&mut app));
    press(&mut app, "G");
    insta::assert_snapshot!("help_80x24_end", screen(&mut app));
    // Scrolling stops at the end: one more line down changes nothing.
    let before = app.mode.clone();
    press(&mut app, "j");
    assert_eq!(app.mode, before);
    press(&mut app, "g");
    assert!(screen(&mut app).contains("lines 1–"));
}

#[test]
fn help_in_columns_at_200x50_fits_whole() {
    let mut app = demo_app();
    app.update(Action::Resize(200, 50));
    let screens = help_screens(&mut app);
    assert_eq!(screens.len(), 1, "help scrolls at 200x50:\n{}", screens[0]);
    insta::assert_snapshot!("help_200x50", &screens[0]);
}

#[test]
fn help_search_narrows_to_matching_keys() {
    let mut app = demo_app();
    app.update(Action::Resize(80, 24));
    press(&mut app, "?/allow");
    let s = screen(&mut app);
    assert!(s.contains("search / allow▏"), "{s}");
    assert!(
        s.contains("allow the selected waiting pod for this plugin"),
        "{s}"
    );
    assert!(
        s.lines()
            .any(|l| l.contains("allow ") && l.contains("NS/NAME [PLUGIN]")),
        "{s}"
    );
    assert!(!s.contains("step one plugin"), "{s}");
    // Enter keeps the search and leaves typing: keys scroll again; Esc clears it, a
    // second Esc closes help.
    press(&mut app, "\n");
    insta::assert_snapshot!("help_search_allow", screen(&mut app));
    press(&mut app, "\x1b");
    assert!(screen(&mut app).contains("step one plugin"));
    assert!(matches!(app.mode, super::app::Mode::Help(_)));
    press(&mut app, "\x1b");
    assert_eq!(app.mode, super::app::Mode::Normal);
    // A search with no match says so.
    press(&mut app, "?/zzqx");
    assert!(screen(&mut app).contains("no key, symbol or command matches \"zzqx\""));
}

#[test]
fn notes_about_the_input_go_to_logs_not_the_warning_counter() {
    let mut app = demo_app();
    app.note_all(vec![
        "Pod batch/x: priority 1000 from PriorityClass default-priority".into(),
    ]);
    assert!(app.status.is_none());
    let s = screen(&mut app);
    assert!(!s.contains('⚠'), "{s}");
    press(&mut app, "6");
    assert!(screen(&mut app).contains("NOTE  Pod batch/x: priority 1000"));
    // A real problem is counted and shown.
    app.warn_all(vec![
        "config c.toml: line 2: theme: expected a string".into(),
    ]);
    let s = screen(&mut app);
    assert!(s.contains("⚠ 1"), "{s}");
    assert!(s.contains("config c.toml: line 2"), "{s}");
}

/// What reading the source said reaches the UI by its kind, not by its words: a kind
/// kubestep does not use is a note (Logs), a bad line of a recording a warning (⚠).
#[test]
fn a_sources_notes_and_problems_reach_logs_and_the_warning_counter() {
    let dir = std::env::temp_dir().join(format!("kubestep-tui-notes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let open = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let opts = super::TuiOptions {
            source: Some(path),
            ..Default::default()
        };
        let mut app = super::build_app(&opts, Default::default()).unwrap();
        app.update(Action::Resize(120, 40));
        app
    };
    let mut app = open(
        "c.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n\
         apiVersion: v1\nkind: Node\nmetadata: {name: node-a}\n",
    );
    let s = screen(&mut app);
    assert!(!s.contains('⚠'), "{s}");
    press(&mut app, "6");
    let s = screen(&mut app);
    assert!(
        s.contains("NOTE ") && s.contains("c.yaml:1: skipped ConfigMap (kubestep does"),
        "{s}"
    );
    let mut app = open(
        "r.jsonl",
        "{\"kubestep\":\"recording\",\"version\":1,\"started\":\"2026-01-01T00:00:00Z\"}\nnot json\n",
    );
    let s = screen(&mut app);
    assert!(s.contains("⚠ 1"), "{s}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_queue_gets_the_width_its_names_need_and_shows_the_selection_whole() {
    let mut app = demo_app();
    app.update(Action::Resize(160, 48));
    press(&mut app, "jj");
    let s = screen(&mut app);
    // Every name whole at 160 columns; the selected one on the pane's bottom border.
    for r in &app.queue.rows {
        assert!(s.contains(&r.pod), "{} cut:\n{s}", r.pod);
    }
    let sel = app.selected_queue_row().unwrap().pod.clone();
    assert!(
        s.lines().any(|l| l.starts_with("\"└") && l.contains(&sel)),
        "{s}"
    );
    insta::assert_snapshot!("queue_160x48", s);
    // At 80x24 the names are cut in the rows; moving puts the whole one on the status line.
    app.update(Action::Resize(80, 24));
    press(&mut app, "j");
    let sel = app.selected_queue_row().unwrap().pod.clone();
    let s = screen(&mut app);
    assert!(s.lines().last().unwrap().contains(&sel), "{s}");
}

#[test]
fn panes_resize_with_keys_and_a_mouse_drag() {
    let mut app = demo_app();
    let start = app.areas().main.x;
    press(&mut app, "}}");
    assert_eq!(app.areas().main.x, start + 8);
    press(&mut app, "{");
    assert_eq!(app.areas().main.x, start + 4);
    // Never so wide the main pane loses its 30 columns, nor narrower than 20.
    for _ in 0..40 {
        press(&mut app, "}");
    }
    assert_eq!(app.areas().main.width, 30);
    for _ in 0..40 {
        press(&mut app, "{");
    }
    assert_eq!(app.areas().main.x, super::layout::MIN_LEFT);
    // Drag the border to column 50; a click elsewhere does not resize.
    let l = app.areas();
    app.update(Action::Click(l.main.x, 10));
    app.update(Action::Drag(49, 10));
    app.update(Action::Release);
    assert_eq!(app.areas().main.x, 50);
    app.update(Action::Drag(60, 10));
    assert_eq!(app.areas().main.x, 50, "no drag after the button went up");
    // The queue drawn in the new width.
    let s = screen(&mut app);
    // (Each line of the test screen is quoted: column x is character x + 1.)
    assert!(
        s.lines().nth(1).unwrap().chars().nth(50) == Some('┐'),
        "{s}"
    );
}

#[test]
fn time_travel_shows_the_past() {
    let mut app = demo_app();
    press(&mut app, "nnnnn");
    let last = app.session.history.last().unwrap().seq;
    press(&mut app, "[[");
    assert_eq!(app.cursor, Some(last - 2));
    let s = screen(&mut app);
    assert!(s.contains(&format!("⏪ step {}/{last}", last - 2)), "{s}");
    press(&mut app, "]]");
    assert_eq!(app.cursor, None);
    // Stepping while in the past returns to the present.
    press(&mut app, "[n");
    assert_eq!(app.cursor, None);
}

#[test]
fn timeline_verdicts_as_of_a_past_step() {
    let mut app = demo_app();
    // The first pod to the end: bound.
    press(&mut app, "f");
    let s = screen(&mut app);
    assert!(s.contains("▶✓ Bind           Success"), "{s}");
    // Back to the middle of its Filter: Filter is running, what came later is pending
    // (the timeline shows what was known then, not how the attempt ended).
    while app.moment().is_some_and(|m| {
        m.point != crate::session::Point::Filter || m.plugin.as_deref() != Some("TaintToleration")
    }) {
        press(&mut app, "[");
    }
    let s = screen(&mut app);
    assert!(s.contains("▶… Filter         running"), "{s}");
    assert!(s.contains("… Score          pending"), "{s}");
    assert!(s.contains("Cycle · ⏪ attempt 1"), "{s}");
    insta::assert_snapshot!(s);
}

/// Travels back until `pred` holds for the step shown.
fn back_until(app: &mut App, pred: impl Fn(&crate::session::StepRecord) -> bool) {
    while !app.moment().is_some_and(&pred) {
        let before = app.cursor;
        press(app, "[");
        assert!(
            app.cursor != before || before.is_none(),
            "no such step in history"
        );
    }
}

#[test]
fn past_moment_shows_the_queue_of_then() {
    let mut app = demo_app();
    until_waiting(&mut app, GATE);
    // Now: the trainer is unschedulable, the gate waits at Permit.
    let now = screen(&mut app);
    assert!(now.contains("✗ ml/trainer-llm-0"), "{now}");
    // Back to the trainer's first Filter step: it is in flight, the gate still in
    // activeQ, nobody waits at Permit.
    back_until(&mut app, |s| {
        s.pod.as_deref() == Some(TRAINER) && s.point == crate::session::Point::Filter
    });
    let s = screen(&mut app);
    assert!(s.contains("▶ ml/trainer-llm-0"), "{s}");
    assert!(s.contains("● shop/release-gate-0"), "{s}");
    assert!(s.contains("Queue 3, 6 bound hidden (d) ⏪ step"), "{s}");
    assert!(s.contains("no pod waited at Permit then"), "{s}");
    insta::assert_snapshot!(s);
    // Back to now.
    press(&mut app, "0");
    assert!(app.queue.past.is_none());
    assert!(screen(&mut app).contains("✗ ml/trainer-llm-0"));
}

#[test]
fn a_past_queue_no_longer_kept_says_so() {
    let mut app = demo_app();
    // A tiny budget: only the newest queue moments are kept.
    app.session.history.queues.max_rows = 12;
    press(&mut app, "ffff");
    let oldest = app.session.history.queues.oldest().unwrap();
    let first = app.session.history.steps.front().unwrap().seq;
    assert!(
        first < oldest,
        "the budget should have dropped the first moments"
    );
    while app.cursor != Some(first) {
        press(&mut app, "[");
    }
    let s = screen(&mut app);
    assert!(s.contains("the queue at step 1 is no longer"), "{s}");
    // The budget is named, not full speed blamed.
    let text = crate::components::queue::draw::empty_text(&app);
    assert!(text.contains("holds up to 12 rows"), "{text}");
    assert!(text.contains("--history"), "{text}");
    // No counts then: an empty list there is not an empty queue.
    assert!(s.contains("Queue ⏪ step 1 "), "{s}");
    assert!(!s.contains("Queue 0/0"), "{s}");
}

/// After `F`, travelling back shows the queue and waiting pods of the steps run at full
/// speed too (kept as changes from the moment before, rebuilt on demand).
#[test]
fn the_queue_of_steps_run_at_full_speed_is_kept() {
    let mut app = basic_app(20, 30, (120, 40));
    sprint(&mut app);
    assert_eq!(app.session.records().len(), 30);
    let last = app.session.history.last().unwrap().seq;
    assert!(app.session.history.queues.kept_as_changes() > 0);
    // Back into the run: about the middle, a pod in flight and others still in activeQ.
    while app.cursor.is_none_or(|c| c + 200 > last) {
        press(&mut app, "[");
    }
    let past = app.queue.past.clone().unwrap();
    assert!(past.kept, "{past:?}");
    let s = screen(&mut app);
    assert!(!s.contains("is no longer kept"), "{s}");
    assert!(s.contains("▶ default/pod-"), "{s}");
    assert!(s.contains("● default/pod-"), "{s}");
}

#[test]
fn waiting_list_in_the_past_and_allow_refused_there() {
    let mut app = demo_app();
    until_waiting(&mut app, GATE);
    press(&mut app, "a");
    assert_eq!(app.session.records()[GATE].status, PodStatus::Bound);
    // Back to when the gate was parked at Permit: it waits there again, with the time
    // it had left then, in the queue and in the waiting list.
    back_until(&mut app, |s| {
        s.pod.as_deref() == Some(GATE)
            && s.point == crate::session::Point::Permit
            && s.plugin.is_none()
    });
    let past = app.cursor;
    assert_eq!(app.waiting.rows.len(), 1);
    let s = screen(&mut app);
    assert!(s.contains("Waiting at Permit 1 ⏪ step"), "{s}");
    assert!(s.contains("⏸ shop/release-gate-0 MA 15m00s"), "{s}");
    // Allowing or rejecting there would act on a past state: refused, nothing changes.
    press(&mut app, "\tr");
    assert_eq!(app.mode, super::app::Mode::Normal);
    let (level, msg) = app.status.clone().unwrap();
    assert_eq!(level, super::app::Level::Error);
    assert!(msg.contains("reject acts on pods waiting now"), "{msg}");
    press(&mut app, "a");
    let (_, msg) = app.status.clone().unwrap();
    assert!(msg.contains("allow acts on pods waiting now"), "{msg}");
    assert_eq!(app.cursor, past);
    assert_eq!(app.session.records()[GATE].status, PodStatus::Bound);
    insta::assert_snapshot!(screen(&mut app));
}

#[test]
fn what_if_never_enters_history() {
    let mut app = demo_app();
    press(&mut app, "ff");
    let steps = app.session.history.steps.len();
    let attempts = app.session.history.attempts.len();
    let pods = app.session.summary().len();
    // Disable the first plugin (NodeUnschedulable), re-run the trainer.
    press(&mut app, &format!("p{TRAINER}\n7xR"));
    settle(&mut app);
    let r = app.tabs.whatif.result.as_ref().unwrap().as_ref().unwrap();
    assert_eq!(r.pod, TRAINER);
    assert!(
        r.alt_label.contains("NodeUnschedulable disabled"),
        "{}",
        r.alt_label
    );
    assert_eq!(app.session.history.steps.len(), steps);
    assert_eq!(app.session.history.attempts.len(), attempts);
    assert_eq!(app.session.summary().len(), pods);
    insta::assert_snapshot!(screen(&mut app));
}

#[test]
fn what_if_field_edits_rerun_the_pod_on_copies() {
    let mut app = demo_app();
    press(&mut app, "ff");
    let steps = app.session.history.steps.len();
    let cluster_pod = app.session.cluster().pod(TRAINER).cloned();
    let gpu_node = "ip-10-0-3-31.eu-west-1.compute.internal";
    // The toleration the explain hint suggests, typed at the what-if prompt.
    press(&mut app, &format!("p{TRAINER}\n"));
    press(
        &mut app,
        "epod toleration nvidia.com/gpu=present:NoSchedule\n",
    );
    assert_eq!(app.tab, Tab::WhatIf);
    // The status line names the edit the re-run is for.
    let (_, msg) = app.status.clone().unwrap();
    assert_eq!(
        msg,
        format!(
            "what-if: pod toleration nvidia.com/gpu=present:NoSchedule added; re-running {TRAINER}"
        )
    );
    settle(&mut app);
    let r = app.tabs.whatif.result.as_ref().unwrap().as_ref().unwrap();
    assert_eq!(r.pod, TRAINER);
    let base = r.base.as_ref().unwrap();
    let alt = r.alt.as_ref().unwrap();
    assert!(base.bound.is_none(), "{:?}", base.message);
    assert_eq!(alt.bound.as_deref(), Some(gpu_node), "{:?}", alt.message);
    insta::assert_snapshot!("what_if_field_edit", screen(&mut app));
    // A node edit too: the GPU node's taint removed on the copy; the real node keeps it.
    press(
        &mut app,
        &format!("enode {gpu_node} untaint nvidia.com/gpu\n"),
    );
    settle(&mut app);
    assert_eq!(app.tabs.whatif.edits.fields.len(), 2);
    let real = app
        .session
        .cluster()
        .nodes()
        .iter()
        .find(|n| n.metadata.name.as_deref() == Some(gpu_node))
        .unwrap()
        .clone();
    assert!(
        real.spec
            .as_ref()
            .unwrap()
            .taints
            .as_ref()
            .unwrap()
            .iter()
            .any(|t| t.key == "nvidia.com/gpu")
    );
    // Bad input names the field and changes nothing.
    for (line, said) in [
        (
            "pod request cpu=5x",
            "pod request cpu: \"5x\" is not a quantity",
        ),
        ("node nope label a=b", "node nope: no such node"),
        (
            "pod toleration gpu=true:Bad",
            "pod toleration: effect \"Bad\" must be",
        ),
    ] {
        press(&mut app, &format!("e{line}\n"));
        let (level, msg) = app.status.clone().unwrap();
        assert_eq!(level, super::app::Level::Error, "{line}");
        assert!(msg.starts_with(said), "{line}: {msg}");
        assert_eq!(app.tabs.whatif.edits.fields.len(), 2);
    }
    // Undo drops the last edit and re-runs.
    press(&mut app, "u");
    settle(&mut app);
    assert_eq!(app.tabs.whatif.edits.fields.len(), 1);
    assert!(
        app.tabs
            .whatif
            .result
            .as_ref()
            .unwrap()
            .as_ref()
            .unwrap()
            .alt_label
            .contains("toleration")
    );
    // None of it touched the session.
    assert_eq!(app.session.history.steps.len(), steps);
    assert_eq!(app.session.cluster().pod(TRAINER).cloned(), cluster_pod);
}

#[test]
fn command_line_runs_script_commands() {
    let mut app = demo_app();
    press(&mut app, ":break Permit\n");
    assert_eq!(app.session.breakpoints.len(), 1);
    press(&mut app, ":continue\n");
    assert_eq!(
        app.session.current.as_ref().map(|a| a.pod().key.clone()),
        Some("shop/checkout-7d9f6c8b5-w8r2t".to_string())
    );
    press(&mut app, ":show waiting\n");
    assert!(matches!(app.mode, super::app::Mode::Output { .. }));
    press(&mut app, "\x1b:frobnicate\n");
    assert!(
        matches!(&app.status, Some((super::app::Level::Error, m)) if m.contains("unknown command"))
    );
}

#[test]
fn continue_runs_on_ticks_and_stops_at_breakpoints() {
    let mut app = demo_app();
    press(&mut app, ":break Reserve\n");
    press(&mut app, "c");
    assert!(app.running);
    for _ in 0..200 {
        app.update(Action::Tick(std::time::Duration::from_millis(100)));
        if !app.running {
            break;
        }
    }
    assert!(!app.running);
    let (_, msg) = app.status.clone().unwrap();
    assert!(msg.contains("breakpoint: Reserve"), "{msg}");
}

#[test]
fn queue_filter_and_quit_confirmation() {
    let mut app = demo_app();
    press(&mut app, "/trn\n");
    assert_eq!(app.queue.order.len(), 1);
    assert_eq!(app.selected_queue_row().unwrap().pod, TRAINER);
    press(&mut app, "\x1b");
    assert!(app.queue.filter.is_empty());
    until_waiting(&mut app, GATE);
    press(&mut app, "q");
    assert_eq!(app.mode, super::app::Mode::ConfirmQuit);
    assert!(!app.quit);
    press(&mut app, "n");
    assert!(!app.quit);
    press(&mut app, "qy");
    assert!(app.quit);
}

#[test]
fn mouse_focuses_and_selects() {
    let mut app = demo_app();
    // The bound pods listed too, so there are rows to scroll.
    press(&mut app, "d");
    let l = app.areas();
    app.update(Action::Click(l.queue.x + 3, l.queue.y + 3));
    assert_eq!(app.focus, Pane::Queue);
    assert_eq!(app.queue.selected, 2);
    app.update(Action::Click(l.main.x + 3, l.main.y + 4));
    assert_eq!(app.focus, Pane::Main);
    // The tab titles on the main pane's border.
    let x = l.main.x + 1 + super::layout::tab_labels(l.main.width, Tab::Filter)[0].len() as u16 + 2;
    app.update(Action::Click(x, l.main.y));
    assert_eq!(app.tab, Tab::Scores);
    app.update(Action::ScrollDown(l.queue.x + 3, l.queue.y + 3));
    assert_eq!(app.queue.selected, 5);
}

#[test]
fn every_theme_renders_and_mono_has_no_colour() {
    for (name, _) in theme::BUNDLED {
        let mut w = Vec::new();
        let t = theme::load(name, None, &mut w).unwrap();
        let pass = t.verdict_pass;
        let mut app = demo_app_with(t);
        press(&mut app, "nnn");
        let term = terminal(&mut app);
        let buf = term.backend().buffer();
        let tick = buf
            .content
            .iter()
            .find(|c| c.symbol() == "✓")
            .unwrap_or_else(|| panic!("{name}: no ✓ drawn"));
        assert_eq!(tick.fg, pass.fg.unwrap_or(Color::Reset), "{name}");
        if name == "mono" {
            assert!(
                buf.content
                    .iter()
                    .all(|c| c.fg == Color::Reset && c.bg == Color::Reset),
                "mono drew a colour"
            );
        }
        insta::assert_snapshot!(format!("theme_{name}"), {
            // Text is the same in every theme; the styles of key cells tell them apart.
            let cell = |c: &ratatui::buffer::Cell| {
                format!("fg={:?} bg={:?} mod={:?}", c.fg, c.bg, c.modifier)
            };
            format!("✓ {}\nheader {}", cell(tick), cell(&buf[(1, 0)]))
        });
    }
}

#[test]
fn small_terminal_80x24() {
    let mut app = demo_app();
    app.update(Action::Resize(80, 24));
    press(&mut app, "nnn");
    insta::assert_snapshot!(screen(&mut app));
}

/// A generated cluster of `nodes` nodes and `pods` pending pods (scheduler_perf's basic
/// shape), on a screen of `size`.
pub(crate) fn basic_app(nodes: usize, pods: usize, size: (u16, u16)) -> App {
    basic_app_with(nodes, pods, size, Default::default())
}

fn basic_app_with(
    nodes: usize,
    pods: usize,
    size: (u16, u16),
    opts: crate::session::SessionOptions,
) -> App {
    use crate::cluster::{ClusterState, Object};
    use kubestep_engine::testing::workloads::{Workload, make_nodes, make_pods};
    let mut cluster = ClusterState::default();
    for n in make_nodes(nodes, 7) {
        cluster.add(Object::Node(Box::new(n)));
    }
    for p in make_pods(Workload::Basic, pods, 7, "default", 0) {
        cluster.add(Object::Pod(Box::new(p)));
    }
    let session = crate::session::Session::new(
        cluster,
        kubestep_engine::config::default_configuration(),
        opts,
        Box::new(crate::session::LocalActuator),
    )
    .unwrap();
    let mut app = App::new(session, "generated", Theme::mono(), Keymap::default());
    app.update(Action::Resize(size.0, size.1));
    app
}

/// 5,000 nodes: stepping and every tab draw. How fast is measured by `kubestep bench`
/// and by hand in tmux (the notes have the numbers), not asserted here.
#[test]
fn five_thousand_nodes_step_and_draw_every_tab() {
    let mut app = basic_app(5_000, 50, (160, 50));
    press(&mut app, "nnn");
    let mut term = Terminal::new(TestBackend::new(160, 50)).unwrap();
    for keys in ["", "j", "G", "o", "2", "3"] {
        press(&mut app, keys);
        term.draw(|f| super::draw::draw(f, &app)).unwrap();
    }
    assert_eq!(app.tabs.filter.order.len(), 5_000);
}

/// `F`, then ticks until the sprint stops; what the status line says then.
pub(crate) fn sprint(app: &mut App) -> String {
    press(app, "F");
    for _ in 0..2_000 {
        app.update(Action::Tick(std::time::Duration::from_millis(100)));
        if !app.running {
            break;
        }
    }
    assert!(!app.running);
    app.status.clone().unwrap().1
}

#[test]
fn sprint_runs_to_a_breakpoint_then_to_the_end_keeping_the_last_queue() {
    let mut app = demo_app();
    press(&mut app, ":break Reserve\n");
    press(&mut app, "F");
    assert!(app.running && app.sprint && app.fast());
    for _ in 0..200 {
        app.update(Action::Tick(std::time::Duration::from_millis(100)));
        if !app.running {
            break;
        }
    }
    let (_, msg) = app.status.clone().unwrap();
    assert!(msg.contains("breakpoint: Reserve"), "{msg}");
    assert!(!app.sprint);
    // Without breakpoints a sprint stops where only a person (or a timeout) can act: it
    // says which pod waits at Permit and when its wait times out.
    press(&mut app, ":clear\n");
    let msg = sprint(&mut app);
    assert!(
        msg.contains(&format!("{GATE} waits at Permit (the first timeout in ")),
        "{msg}"
    );
    assert!(msg.contains("F runs on to the timeout"), "{msg}");
    assert_eq!(app.pods_waiting(), 1);
    // F again runs on through the timeout, as a headless run does: the wait ends
    // (rejected), the pod is retried and waits anew, and the sprint stops there.
    let first_wait = app.session.waiting().list()[0].since;
    let msg = sprint(&mut app);
    let timed_out = app
        .session
        .history
        .attempts
        .iter()
        .any(|a| a.pod == GATE && a.message.as_deref().is_some_and(|m| m.contains("timeout")));
    assert!(timed_out, "{msg}");
    let waits = app.session.waiting().list();
    assert!(waits.iter().all(|w| w.since > first_wait), "{msg}");
    // The queue of every step is kept, those run at full speed too.
    let last = app.session.history.last().unwrap().seq;
    let first = app.session.history.steps.front().unwrap().seq;
    assert!((first..=last).all(|s| app.session.history.queues.at(s).is_some()));
}

/// Upstream's search stops once it has enough feasible nodes (144 feasible and examined of 300 here): the
/// Filter tab says how many it examined, dims the rest with their verdicts in
/// parentheses, leaves them out of the per-plugin counts, and `/+` hides them. The count
/// is upstream's evaluatedNodes, the trace's: the node that passed once the search had
/// its 144 is not counted (upstream drops its result); it was counted, 145, before.
#[test]
fn filter_tab_marks_the_nodes_upstream_never_examined() {
    let mut app = basic_app(300, 3, (120, 40));
    press(&mut app, "nnnf1");
    let a = app.moment_attempt().unwrap();
    let m = a.matrix.unwrap();
    let cycle = app
        .session
        .history
        .attempt(a.id)
        .unwrap()
        .cycle
        .clone()
        .unwrap();
    assert_eq!((cycle.feasible, cycle.evaluated), (144, 144));
    assert_eq!(m.examined, Some(cycle.evaluated));
    assert_eq!(m.nodes.len(), 300);
    let s = screen(&mut app);
    assert!(s.contains("Node (144 examined of 300)"), "{s}");
    // The last rows (in examined order) were never examined.
    press(&mut app, "G");
    let s = screen(&mut app);
    assert!(s.contains("(✓)"), "{s}");
    assert!(
        s.contains("not examined: upstream's search stopped after"),
        "{s}"
    );
    press(&mut app, "/+\n");
    assert_eq!(app.tabs.filter.order.len(), 144);
    let s = screen(&mut app);
    assert!(!s.contains("(✓)"), "{s}");
}

/// The name of the matrix row selected.
fn matrix_node(app: &App) -> String {
    let a = app.moment_attempt().unwrap();
    let m = a.matrix.unwrap();
    let r = app.tabs.filter.order[app.tabs.filter.row];
    a.names.get(m.nodes[r]).to_string()
}

#[test]
fn filter_tab_filters_sorts_by_plugin_counts_and_jumps_to_the_chosen_node() {
    let mut app = demo_app();
    press(&mut app, "nnn1");
    let plugins: Vec<&str> = app
        .moment_attempt()
        .unwrap()
        .matrix
        .unwrap()
        .plugins
        .clone();
    let tt = plugins
        .iter()
        .position(|p| *p == "TaintToleration")
        .unwrap();
    let nrf = plugins
        .iter()
        .position(|p| *p == "NodeResourcesFit")
        .unwrap();
    // Counts per plugin, computed with the rows.
    assert_eq!(app.tabs.filter.rejections[tt], 2);
    assert_eq!(app.tabs.filter.rejections[nrf], 1);
    let s = screen(&mut app);
    assert!(s.contains("✗ per plugin"), "{s}");
    // `!` keeps rejected nodes, `!PLUGIN` (name or abbreviation) those it rejected.
    press(&mut app, "/!\n");
    assert_eq!(app.tabs.filter.order.len(), 3);
    press(&mut app, "\x1b/!NRF\n");
    assert_eq!(app.tabs.filter.order.len(), 1);
    assert!(screen(&mut app).contains("Node (1/6"));
    press(&mut app, "\x1b/!taint\n");
    assert_eq!(app.tabs.filter.order.len(), 2);
    press(&mut app, "\x1b");
    assert_eq!(app.tabs.filter.order.len(), 6);
    // Sort: rejected first, then by the selected column's plugin.
    press(&mut app, "o");
    assert_eq!(
        app.tabs.filter.sort,
        crate::components::tabs::filter::order::MatrixSort::Rejected
    );
    press(&mut app, "o");
    assert_eq!(
        app.tabs.filter.sort,
        crate::components::tabs::filter::order::MatrixSort::ByPlugin
    );
    app.tabs.filter.col = 0;
    for _ in 0..tt {
        press(&mut app, "L");
    }
    let m = app.moment_attempt().unwrap().matrix.unwrap();
    let rejected_by_tt = |r: usize| {
        matches!(
            m.cell(r, tt),
            crate::framework::cycle::FilterCell::Reject { .. }
        )
    };
    assert!(rejected_by_tt(app.tabs.filter.order[0]) && rejected_by_tt(app.tabs.filter.order[1]));
    assert!(!rejected_by_tt(app.tabs.filter.order[2]));
    insta::assert_snapshot!("filter_by_plugin_80x24", {
        app.update(Action::Resize(80, 24));
        screen(&mut app)
    });
    // `*`: the node the attempt chose, once it chose one.
    press(&mut app, "f");
    let chosen = {
        let a = app.moment_attempt().unwrap();
        a.node.unwrap().to_string()
    };
    press(&mut app, "1G*");
    assert_eq!(matrix_node(&app), chosen);
    assert!(app.status.as_ref().unwrap().1.contains(&chosen));
    // A name filter that hides it is cleared by the jump.
    press(&mut app, "/zzz\n*");
    assert_eq!(matrix_node(&app), chosen);
}

/// The Cycle pane's cursor starts on ▶, so `b` there breaks on the point shown; `:break`
/// says what it set; a QueueSort breakpoint fires before the next pod's pop.
#[test]
fn breakpoints_set_where_the_person_looks_and_queue_sort_fires() {
    let mut app = demo_app();
    press(&mut app, "nnnn");
    let here = app.moment().unwrap().point;
    while app.focus != Pane::Timeline {
        press(&mut app, "\t");
    }
    press(&mut app, "b");
    assert_eq!(
        app.session.breakpoints,
        vec![crate::session::Breakpoint::Point(here)]
    );
    press(&mut app, ":clear\n:break QueueSort\n");
    let (_, msg) = app.status.clone().unwrap();
    assert!(msg.starts_with("breakpoint set: QueueSort (1 set"), "{msg}");
    press(&mut app, "f");
    let attempts = app.session.history.attempts.len();
    press(&mut app, "c");
    for _ in 0..50 {
        app.update(Action::Tick(std::time::Duration::from_millis(100)));
        if !app.running {
            break;
        }
    }
    let (_, msg) = app.status.clone().unwrap();
    assert!(msg.contains("before QueueSort"), "{msg}");
    assert!(app.session.current.is_none());
    assert!(app.session.history.attempts.len() <= attempts + 1);
}

/// Time travel reaches the Detail tab: at a past step it says where the pod was then,
/// shows the pod and its node as they were then (not as they are now: no `nodeName`
/// before the binding, not yet among the node's pods), and labels the session-wide
/// attempt number apart from the pod's own count and the record below as the present.
#[test]
fn detail_at_a_past_step_shows_the_pod_and_node_as_they_were_then() {
    let mut app = demo_app();
    press(&mut app, "ffff");
    // Back to a step inside an attempt that ended Bound.
    back_to_score_of_a_bound_pod(&mut app, None);
    let step = app.moment().unwrap().clone();
    let pod = step.pod.clone().unwrap();
    let node = app.session.record(&pod).unwrap().node.clone().unwrap();
    press(&mut app, "5");
    let s = screen(&mut app);
    let then = format!(
        "⏪ at step {}: being scheduled in session attempt #{} at Score",
        step.seq,
        step.attempt.unwrap()
    );
    assert!(s.contains(&then), "{s}");
    assert!(s.contains("now: status Bound"), "{s}");
    assert!(s.contains("the pod's attempts: 1"), "{s}");
    assert!(s.contains(&format!("Pod {pod}")), "{s}");
    assert!(s.contains("the pod as session attempt #"), "{s}");
    // The object shown is the pending pod its attempt popped.
    let lines = super::components::tabs::detail::lines(&app);
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    assert!(text.iter().any(|l| l.contains("kind: Pod")), "{text:#?}");
    assert!(!text.iter().any(|l| l.contains("nodeName")), "{text:#?}");
    // Its node then: the pod was not on it yet; now it is.
    app.tabs
        .detail
        .open(super::components::tabs::detail::DetailTarget::Node(
            node.clone(),
        ));
    press(&mut app, "5");
    let text: Vec<String> = super::components::tabs::detail::lines(&app)
        .iter()
        .map(|l| l.to_string())
        .collect();
    assert!(
        text.iter().any(|l| l.contains(&format!(
            "⏪ as at step {}: the cluster when session attempt #",
            step.seq
        ))),
        "{text:#?}"
    );
    assert!(
        !text.iter().any(|l| l.contains(&format!("  {pod} cpu"))),
        "{text:#?}"
    );
    press(&mut app, "0");
    let text: Vec<String> = super::components::tabs::detail::lines(&app)
        .iter()
        .map(|l| l.to_string())
        .collect();
    assert!(
        text.iter().any(|l| l.contains(&format!("  {pod} cpu"))),
        "{text:#?}"
    );
}

/// Travels back to a Score step (of `plugin`, if given) of a pod bound since.
fn back_to_score_of_a_bound_pod(app: &mut App, plugin: Option<&str>) {
    loop {
        press(app, "[");
        let Some(m) = app.moment() else { continue };
        let bound = m
            .pod
            .as_deref()
            .and_then(|p| app.session.record(p))
            .map(|r| r.status)
            == Some(PodStatus::Bound);
        if bound
            && m.point == crate::session::Point::Score
            && plugin.is_none_or(|p| m.plugin.as_deref() == Some(p))
        {
            return;
        }
        assert_ne!(app.cursor, app.session.history.steps.front().map(|s| s.seq));
    }
}

/// When the history budget no longer keeps the world of a past step, the Detail tab says
/// so with the budget, and shows no present object in its place.
#[test]
fn detail_at_a_step_whose_world_is_forgotten_names_the_budget() {
    let opts = crate::session::SessionOptions {
        history_bytes: 64 << 10,
        ..Default::default()
    };
    let mut app = basic_app_with(200, 40, (120, 40), opts);
    sprint(&mut app);
    let first = app.session.history.steps.front().unwrap().seq;
    while app.cursor != Some(first) {
        press(&mut app, "[");
    }
    press(&mut app, "5");
    let text: Vec<String> = super::components::tabs::detail::lines(&app)
        .iter()
        .map(|l| l.to_string())
        .collect();
    assert!(
        text.iter()
            .any(|l| l.contains("is no longer kept") && l.contains("of --history 0.1 MiB")),
        "{text:#?}"
    );
    assert!(!text.iter().any(|l| l.contains("nodeName")), "{text:#?}");
}

/// At a step before an attempt ended, no line shows its end: the Filter tab's Σ says
/// the attempt is in progress (with what Filter had found), the Score tab has no ★, no
/// totals and no rank before SelectHost, nor the columns not scored yet.
#[test]
fn filter_and_score_tabs_at_a_past_step_show_that_step() {
    let mut app = demo_app();
    press(&mut app, "ffff");
    back_to_score_of_a_bound_pod(&mut app, Some("NodeResourcesFit"));
    let pod = app.moment().unwrap().pod.clone().unwrap();
    assert_eq!(app.session.record(&pod).unwrap().status, PodStatus::Bound);
    press(&mut app, "1");
    let s = screen(&mut app);
    assert!(!s.contains("Σ Bound"), "{s}");
    assert!(
        s.contains("Σ attempt in progress at Score; Filter found"),
        "{s}"
    );
    assert!(app.moment_attempt().unwrap().node.is_none());
    press(&mut app, "2");
    let s = screen(&mut app);
    assert!(!s.contains('★'), "{s}");
    assert!(s.contains("scoring in progress at this step"), "{s}");
    // Raw scores: the plugins that have run have theirs, the others none yet.
    press(&mut app, "v");
    let s = screen(&mut app);
    insta::assert_snapshot!(s);
    // At SelectHost the choice is made: ★ and the totals appear.
    while app
        .moment()
        .is_some_and(|m| m.point < crate::session::Point::SelectHost)
    {
        press(&mut app, "]");
    }
    let s = screen(&mut app);
    assert!(s.contains('★'), "{s}");
}

/// `p` on a pod whose attempts the history no longer keeps says so, and Explain then
/// re-runs that pod (not the pod of the step shown), showing its work in progress.
#[test]
fn jumping_to_a_pod_the_history_forgot_says_so_and_explains_that_pod() {
    let opts = crate::session::SessionOptions {
        history_bytes: 0,
        ..Default::default()
    };
    let mut app = basic_app_with(20, 5, (120, 40), opts);
    press(&mut app, "fffff");
    assert_eq!(
        app.session.records()["default/pod-000001"].status,
        PodStatus::Bound
    );
    press(&mut app, "pdefault/pod-000001\n");
    let (_, msg) = app.status.clone().unwrap();
    assert!(
        msg.contains("default/pod-000001: its 1 attempt(s) are no longer in the history"),
        "{msg}"
    );
    assert_eq!(app.subject_pod().as_deref(), Some("default/pod-000001"));
    press(&mut app, "4");
    let s = screen(&mut app);
    assert!(s.contains("default/pod-000001: Bound"), "{s}");
    assert!(s.contains("Re-run on the current cluster"), "{s}");
}

/// Paused after a full-speed run, the Filter tab shows the attempt shown at once (it
/// said "Filter did not run" until the tab was entered again).
#[test]
fn pausing_a_full_speed_run_recomputes_the_panes_at_once() {
    let mut app = basic_app(300, 3_000, (120, 40));
    press(&mut app, "1F");
    app.update(Action::Tick(std::time::Duration::from_millis(100)));
    assert!(
        app.running,
        "the run ended within one tick: give it more pods"
    );
    assert!(app.full.is_empty());
    press(&mut app, " ");
    assert!(!app.running);
    let a = app.moment_attempt().unwrap();
    assert!(a.matrix.is_some(), "attempt {} has no matrix", a.id);
    let s = screen(&mut app);
    assert!(s.contains("examined"), "{s}");
}
