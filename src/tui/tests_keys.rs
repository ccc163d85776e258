//! Keys and panes as a k9s / lazygit / vim user expects them: moving inside grids, time
//! travel on its own keys, Tab in screen order, help search by synonyms, hints that name
//! the keys in force, the Logs tab, and play paced by pods per second.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::super::action::{Action, Command, Pane, Tab};
use super::super::app::{App, HelpState, Mode};
use super::super::components::help;
use super::super::components::tabs::state_tree::visible_paths;
use super::super::keymap::Keymap;
use super::super::theme::Theme;
use super::{demo_app, press, screen};

/// Sends one key with modifiers, as crossterm reports it.
fn send(app: &mut App, code: KeyCode, mods: KeyModifiers) {
    if let Some(a) = app.action_for_key(&KeyEvent::new(code, mods)) {
        app.update(a);
    }
}

#[test]
fn h_l_and_arrows_move_across_grid_columns_and_brackets_travel_in_time() {
    let mut app = demo_app();
    press(&mut app, "nnn1");
    let cols = app
        .moment_attempt()
        .and_then(|a| a.matrix)
        .map_or(0, |m| m.plugins.len());
    assert!(cols >= 3, "{cols} columns");
    assert_eq!(app.tabs.filter.col, 0);
    press(&mut app, "l");
    assert_eq!(app.tabs.filter.col, 1);
    send(&mut app, KeyCode::Right, KeyModifiers::NONE);
    assert_eq!(app.tabs.filter.col, 2);
    press(&mut app, "h");
    assert_eq!(app.tabs.filter.col, 1);
    send(&mut app, KeyCode::Left, KeyModifiers::NONE);
    assert_eq!(app.tabs.filter.col, 0);
    // j/k move rows in the same grid.
    press(&mut app, "j");
    assert_eq!(app.tabs.filter.row, 1);
    press(&mut app, "k");
    assert_eq!(app.tabs.filter.row, 0);
    // None of that moved through time.
    assert_eq!(app.cursor, None);

    // Time travel: [ ], Shift-← →, Alt-← →.
    let last = app.session.history.last().unwrap().seq;
    press(&mut app, "[");
    assert_eq!(app.cursor, Some(last - 1));
    send(&mut app, KeyCode::Left, KeyModifiers::SHIFT);
    assert_eq!(app.cursor, Some(last - 2));
    send(&mut app, KeyCode::Left, KeyModifiers::ALT);
    assert_eq!(app.cursor, Some(last - 3));
    send(&mut app, KeyCode::Right, KeyModifiers::SHIFT);
    assert_eq!(app.cursor, Some(last - 2));
    send(&mut app, KeyCode::Right, KeyModifiers::ALT);
    press(&mut app, "]");
    assert_eq!(app.cursor, None);

    // The Scores grid: h/l move its columns too.
    press(&mut app, "f2");
    assert_eq!(app.tab, Tab::Scores);
    let cols = app
        .moment_attempt()
        .and_then(|a| a.scores)
        .map_or(0, |t| t.plugins.len() + t.extenders.len());
    assert!(cols >= 2, "{cols} score columns");
    press(&mut app, "l");
    assert_eq!(app.tabs.scores.col, 1);
    press(&mut app, "h");
    assert_eq!(app.tabs.scores.col, 0);

    // A tab with no columns says where time travel went instead of doing nothing.
    press(&mut app, "6l");
    assert_eq!(app.cursor, None);
    let (_, msg) = app.status.clone().unwrap();
    assert_eq!(
        msg,
        "h l move across columns in the Filter and Scores tabs; [ ] travel in time"
    );

    // Help says so, from the keymap.
    let help = super::super::components::help::text(&app, &Default::default(), 200).join("\n");
    assert!(
        help.lines()
            .any(|l| l.contains("[/S-←/M-←") && l.contains("time travel: one step back")),
        "{help}"
    );
    assert!(
        help.lines()
            .any(|l| l.contains("h/←/H/<") && l.contains("previous column")),
        "{help}"
    );
}

#[test]
fn a_shifted_key_with_no_binding_of_its_own_does_what_the_key_does() {
    let app = demo_app();
    let km = &app.keymap;
    let up = KeyEvent::new(KeyCode::Up, KeyModifiers::SHIFT);
    assert_eq!(km.command(&up), Some(Command::Up));
    // Shift-Tab stays BackTab (crossterm reports it with Shift).
    let back = KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT);
    assert_eq!(km.command(&back), Some(Command::FocusPrev));
}

/// Tab follows the screen: the left column top to bottom (queue, cycle, waiting), then
/// the main pane; Shift-Tab goes back the same way.
#[test]
fn tab_moves_the_focus_in_screen_order() {
    let mut app = demo_app();
    let l = app.areas();
    let at = |p: Pane| {
        let r = match p {
            Pane::Queue => l.queue,
            Pane::Timeline => l.timeline,
            Pane::Waiting => l.waiting,
            Pane::Main => l.main,
        };
        (r.x, r.y)
    };
    assert_eq!(app.focus, Pane::Queue);
    let mut seen = vec![app.focus];
    for _ in 0..3 {
        press(&mut app, "\t");
        seen.push(app.focus);
    }
    assert_eq!(
        seen,
        [Pane::Queue, Pane::Timeline, Pane::Waiting, Pane::Main]
    );
    // That is the order of the panes' top-left corners, column by column.
    let mut by_place = seen.clone();
    by_place.sort_by_key(|p| at(*p));
    assert_eq!(seen, by_place);
    press(&mut app, "\t");
    assert_eq!(app.focus, Pane::Queue, "wraps around");
    let mut back = Vec::new();
    for _ in 0..4 {
        send(&mut app, KeyCode::BackTab, KeyModifiers::SHIFT);
        back.push(app.focus);
    }
    assert_eq!(
        back,
        [Pane::Main, Pane::Waiting, Pane::Timeline, Pane::Queue]
    );
}

/// The example scene with `step`, `continue`, `breakpoints` and `cancel` on other keys.
fn remapped_app() -> App {
    let keys: toml::Table =
        "step = \"N\"\ncontinue = \"C\"\nbreakpoints = \"Z\"\ncancel = [\"ctrl-g\", \"esc\"]\n"
            .parse()
            .unwrap();
    let mut warnings = Vec::new();
    let keymap = Keymap::with_overrides(&keys, &mut warnings);
    assert!(warnings.is_empty(), "{warnings:?}");
    let session = super::super::example_session().unwrap();
    let mut app = App::new(session, "demo", Theme::mono(), keymap);
    app.update(Action::Resize(110, 32));
    app
}

/// Hints that a default key would make wrong once remapped.
fn assert_no_default_hints(s: &str) {
    for stale in [
        "press n",
        "with n",
        "n step",
        "c run",
        "c pauses",
        "c runs",
        "c lets",
        "B lists",
        "Esc closes",
        "Esc clears",
    ] {
        assert!(!s.contains(stale), "{stale:?} in:\n{s}");
    }
}

#[test]
fn hints_name_the_keys_in_force_after_a_remap() {
    let mut app = remapped_app();
    assert_eq!(
        super::super::start_status(&app),
        format!(
            "{} pods, {} nodes · N step · C run · ? help",
            app.session.records().len(),
            app.session.snapshot().num_nodes()
        )
    );
    let s = screen(&mut app);
    assert!(s.contains("no step yet: press N"), "{s}");
    assert!(
        s.contains("no attempt yet: press N to step the first pod"),
        "{s}"
    );
    assert!(s.contains("N step") && s.contains("C run"), "{s}");
    assert_no_default_hints(&s);
    press(&mut app, "4");
    let s = screen(&mut app);
    assert!(s.contains("no pod yet: step one with N"), "{s}");
    assert_no_default_hints(&s);
    // Popups and help.
    press(&mut app, "Z");
    let s = screen(&mut app);
    assert!(s.contains("C-g closes"), "{s}");
    assert_no_default_hints(&s);
    send(&mut app, KeyCode::Char('g'), KeyModifiers::CONTROL);
    assert_eq!(app.mode, Mode::Normal);
    press(&mut app, "?");
    let s = screen(&mut app);
    assert!(s.contains("C-g closes"), "{s}");
    assert_no_default_hints(&s);
    press(&mut app, "\x1b");
    assert_eq!(app.mode, Mode::Normal);
    // Status lines after steps, breakpoints and runs.
    press(&mut app, "N:break Reserve\n");
    let (_, msg) = app.status.clone().unwrap();
    assert!(
        msg.ends_with("(1 set; Z lists them, C runs to one)"),
        "{msg}"
    );
    press(&mut app, "F");
    let (_, msg) = app.status.clone().unwrap();
    assert!(msg.ends_with("(C pauses)"), "{msg}");
    assert_no_default_hints(&msg);
}

/// Help's search as a person words it: "approve" finds allow (in the keys and in the
/// command line), and says which synonym matched.
#[test]
fn help_search_finds_commands_by_their_synonyms() {
    let app = demo_app();
    let help = |query: &str| {
        let h = HelpState {
            query: query.into(),
            ..Default::default()
        };
        help::text(&app, &h, 400)
    };
    let found = help("approve");
    let entry = |lines: &[String], key: &str, text: &str| {
        lines
            .iter()
            .any(|l| l.starts_with(&format!("{key} ")) && l.trim_end().ends_with(text))
    };
    assert!(
        entry(
            &found,
            "a",
            "allow the selected waiting pod for this plugin (also: approve)"
        ),
        "{found:#?}"
    );
    assert!(
        entry(
            &found,
            "A",
            "allow the selected waiting pod for every plugin (also: approve all)"
        ),
        "{found:#?}"
    );
    assert!(
        entry(&found, "allow", "NS/NAME [PLUGIN] (also: approve)"),
        "{found:#?}"
    );
    assert!(
        !found.iter().any(|l| l.contains("step one plugin")),
        "{found:#?}"
    );
    for (query, key, text) in [
        ("accept", "a", "for this plugin (also: accept)"),
        (
            "deny",
            "r",
            "reject the selected waiting pod (asks a message) (also: deny)",
        ),
        (
            "rewind",
            "[/S-←/M-←",
            "time travel: one step back (also: rewind)",
        ),
        (
            "next",
            "n",
            "step: finish the current extension point (also: next)",
        ),
        ("go", "c/space", "continue / pause (also: go)"),
        ("exit", "q/C-c", "quit (also: exit)"),
        ("yank", "y", "copy the explanation (OSC 52) (also: yank)"),
    ] {
        let found = help(query);
        assert!(entry(&found, key, text), "{query}: {found:#?}");
    }
    // Words a command already has need no synonym note.
    let found = help("allow");
    assert!(!found.iter().any(|l| l.contains("(also:")), "{found:#?}");
}

/// The CycleState tree has its first entry selected as soon as it is shown (Enter opens
/// it without j/k first), and keeps a shown row selected as the step shown changes.
#[test]
fn the_state_tree_always_has_an_entry_selected() {
    let mut app = demo_app();
    press(&mut app, "nnnn3");
    assert_eq!(app.tab, Tab::State);
    assert_eq!(app.tabs.state.selected, vec![0]);
    press(&mut app, "\n");
    assert!(
        app.tabs.state.opened.contains(&vec![0]),
        "Enter opened the first entry"
    );
    // Into the open entry, then to the last row.
    press(&mut app, "jG");
    let rows = visible_paths(&app);
    assert_eq!(&app.tabs.state.selected, rows.last().unwrap());
    let deep = app.tabs.state.selected.clone();
    // Back in time to where the tree is smaller: the selection moves to a row shown.
    let mut smaller = false;
    for _ in 0..20 {
        press(&mut app, "[");
        let rows = visible_paths(&app);
        if rows.is_empty() {
            continue;
        }
        assert!(
            rows.contains(&app.tabs.state.selected),
            "{:?} not in {rows:?}",
            app.tabs.state.selected
        );
        if !rows.contains(&deep) {
            smaller = true;
            assert!(app.tabs.state.selected <= deep);
            break;
        }
    }
    assert!(smaller, "no earlier step had a smaller CycleState");
    // And back to the latest step: the entry chosen there is kept when still shown.
    press(&mut app, "\x1b");
    send(&mut app, KeyCode::End, KeyModifiers::NONE);
    assert!(visible_paths(&app).contains(&app.tabs.state.selected));
}

/// The screen right of the left column, above the footer.
fn main_pane(app: &mut App) -> String {
    let m = app.areas().main;
    let s = screen(app);
    s.lines()
        .skip(m.y as usize)
        .take(m.height as usize)
        .map(|l| l.chars().skip(m.x as usize).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Logs: each note once, no module paths, long lines wrapped under their text, and `G`
/// follows new lines until the person scrolls up (`g` goes to the oldest).
#[test]
fn logs_wrap_follow_and_show_each_message_once() {
    use tracing_subscriber::prelude::*;
    let mut app = demo_app();
    app.update(Action::Resize(80, 24));
    let layer = super::super::logs::RingLayer {
        buffer: app.logs.clone(),
    };
    let sub = tracing_subscriber::registry().with(layer);
    tracing::subscriber::with_default(sub, || {
        app.note_all(vec!["Pod batch/x: priority 1000 from PriorityClass default-priority, a note long enough to wrap twice in the Logs tab at eighty columns".into()]);
        app.warn_all(vec![
            "config c.toml: line 2: theme: expected a string".into(),
        ]);
        press(&mut app, "6");
        for i in 0..40 {
            app.info(format!("status {i}"));
        }
    });
    let all = app.logs.tail(100);
    assert_eq!(
        all.iter().filter(|l| l.contains("batch/x")).count(),
        1,
        "{all:#?}"
    );
    assert_eq!(
        all.iter().filter(|l| l.contains("c.toml")).count(),
        1,
        "{all:#?}"
    );
    assert!(!all.iter().any(|l| l.contains("kubestep_")), "{all:#?}");
    // Following: the newest at the bottom.
    assert_eq!(app.tabs.logs.top, None);
    let s = screen(&mut app);
    assert!(s.contains("INFO  status 39"), "{s}");
    // Back to the oldest: the note wraps, hanging under its text.
    press(&mut app, "g");
    assert_eq!(app.tabs.logs.top, Some(0));
    let s = screen(&mut app);
    insta::assert_snapshot!("logs_80x24_top", s);
    assert!(s.contains("line 1 of 42 · G follows new lines"), "{s}");
    assert!(s.contains("│      tab at eighty columns "), "{s}");
    // Nothing cut in the Logs tab (right of the left column).
    let x = app.areas().main.x as usize;
    assert!(
        !s.lines().any(|l| l.chars().skip(x).any(|c| c == '…')),
        "{s}"
    );
    // Scrolled back, new lines do not move the view.
    let log = |app: &mut App, text: &str| app.logs.push(super::super::logs::line("INFO", text));
    log(&mut app, "status 40");
    assert!(!main_pane(&mut app).contains("status 40"));
    // G follows again: the new line shows, and so do later ones.
    press(&mut app, "G");
    assert_eq!(app.tabs.logs.top, None);
    assert!(main_pane(&mut app).contains("status 40"));
    log(&mut app, "status 41");
    assert!(main_pane(&mut app).contains("status 41"));
    // One line up stops following; scrolling down to the end follows again.
    press(&mut app, "k");
    assert!(app.tabs.logs.top.is_some());
    press(&mut app, "j");
    assert_eq!(app.tabs.logs.top, None);
}

/// A replay of `nodes` nodes and `pods` pods, the pods arriving one every `every` from
/// the start (`every` zero: all at once).
fn arrivals_app(nodes: usize, pods: usize, every: std::time::Duration) -> App {
    use crate::cluster::Object;
    use crate::recording::{Event, EventType, Header, Recording};
    use kubestep_engine::testing::workloads::{Workload, make_nodes, make_pods};
    let start = jiff::Timestamp::UNIX_EPOCH;
    let mut events: Vec<Event> = make_nodes(nodes, 7)
        .into_iter()
        .map(|n| Event {
            at: start,
            kind: EventType::Added,
            object: Box::new(Object::Node(Box::new(n))),
            line: 0,
        })
        .collect();
    for (i, p) in make_pods(Workload::Basic, pods, 7, "default", 0)
        .into_iter()
        .enumerate()
    {
        events.push(Event {
            at: crate::session::clock::add(start, every * i as u32),
            kind: EventType::Added,
            object: Box::new(Object::Pod(Box::new(p))),
            line: 0,
        });
    }
    let rec = Recording {
        header: Header::new(start),
        events,
        warnings: Vec::new(),
        notes: Vec::new(),
        skipped: 0,
    };
    let session = crate::session::Session::from_recording(
        rec,
        kubestep_engine::config::default_configuration(),
        Default::default(),
        Box::new(crate::session::LocalActuator),
    )
    .unwrap();
    let mut app = App::new(session, "arrivals", Theme::mono(), Keymap::default());
    app.update(Action::Resize(120, 40));
    app
}

fn bound(app: &App) -> usize {
    app.session
        .records()
        .values()
        .filter(|r| r.status == crate::session::PodStatus::Bound)
        .count()
}

/// Plays `seconds` of real time in ticks of `tick` (as the terminal loop sends them).
fn play_for(app: &mut App, seconds: f64, tick: std::time::Duration) {
    let n = (seconds / tick.as_secs_f64()).round() as usize;
    for _ in 0..n {
        app.update(Action::Tick(tick));
    }
}

/// With every pod there at the start, virtual time stands still while they are
/// scheduled: play is paced in pods a second, `PODS_PER_SEC` at ×1 times the speed's
/// factor, and ×1 still shows each pod's extension points one after another.
#[test]
fn play_paces_pods_per_second_while_virtual_time_stands_still() {
    use super::super::app::{PODS_PER_SEC, SPEEDS};
    let tick = std::time::Duration::from_millis(100);
    for (speed, seconds) in [(0, 10.0), (1, 5.0), (3, 2.0)] {
        let mut app = arrivals_app(50, 1_000, std::time::Duration::ZERO);
        app.speed = speed;
        press(&mut app, "c");
        play_for(&mut app, seconds, tick);
        let factor = f64::from(SPEEDS[speed].1);
        let rate = bound(&app) as f64 / seconds;
        let want = PODS_PER_SEC * factor;
        assert!(
            (rate - want).abs() <= want * 0.2,
            "{}: {rate} pods/s, want about {want}",
            SPEEDS[speed].0
        );
        assert_eq!(app.session.now(), app.start, "virtual time stood still");
    }
    // ×1: one tick runs part of an attempt, not whole pods.
    let mut app = arrivals_app(50, 10, std::time::Duration::ZERO);
    press(&mut app, "c");
    app.update(Action::Tick(tick));
    assert!(app.session.current.is_some(), "a pod is mid-attempt");
    assert_eq!(bound(&app), 0);
}

/// Pods arriving over five minutes: at max speed play passes virtual time at 600× and
/// fires every arrival it passes in one tick (not one arrival a tick, which took the
/// large recording two minutes); the header says where virtual time ends.
#[test]
fn play_at_max_passes_every_timer_due_within_a_tick_and_the_header_shows_the_end() {
    let mut app = arrivals_app(20, 300, std::time::Duration::from_secs(1));
    assert_eq!(
        app.end,
        Some(crate::session::clock::add(
            app.start,
            std::time::Duration::from_secs(299)
        ))
    );
    let s = screen(&mut app);
    assert!(s.contains("│ virtual +00:00:00.0 / +00:04:59.0 │"), "{s}");
    press(&mut app, "++++++c");
    assert!(app.fast());
    let tick = super::super::terminal::FAST_TICK;
    let mut ticks = 0;
    while app.running && ticks < 10_000 {
        app.update(Action::Tick(tick));
        ticks += 1;
    }
    assert!(!app.running);
    assert_eq!(bound(&app), 300);
    // 299 virtual seconds at 600× is half a second of ticks, give or take a tick per
    // attempt burst.
    let real = ticks as f64 * tick.as_secs_f64();
    assert!(
        real < 1.0,
        "{ticks} ticks ({real} s) to play 5 virtual minutes at max"
    );
    // Where the header has room for it beside the pod shown.
    app.update(Action::Resize(200, 40));
    let s = screen(&mut app);
    assert!(s.contains("│ virtual +00:04:59.0 / +00:04:59.0 │"), "{s}");
}

#[test]
fn speed_keys_say_what_a_speed_means() {
    let mut app = demo_app();
    press(&mut app, "+");
    let (_, msg) = app.status.clone().unwrap();
    assert_eq!(msg, "replay speed ×2: 10 pods/s, virtual time 2× real time");
    press(&mut app, "+++++");
    let (_, msg) = app.status.clone().unwrap();
    assert_eq!(
        msg,
        "replay speed max: pods as fast as the engine goes, virtual time 600× real time"
    );
    press(&mut app, "------c");
    let (_, msg) = app.status.clone().unwrap();
    assert_eq!(msg, "running at ×1: 5 pods/s, virtual time 1× real time");
}
