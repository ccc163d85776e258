//! Every tab at the sizes people's terminals have (80×24, 120×40), on the bundled demo
//! recording and on a 5,000-node cluster: snapshots to review, and the rules checked
//! directly — every tab on the tab bar, every abbreviated column spelled out, cut
//! columns and names marked.

use super::action::{Action, Tab};
use super::app::App;
use super::keymap::Keymap;
use super::tests::{basic_app, press, screen, settle};
use super::theme::Theme;

const SIZES: [(u16, u16); 2] = [(80, 24), (120, 40)];

/// The bundled `demo` recording as `kubestep` with no arguments opens it.
fn demo_recording(size: (u16, u16)) -> App {
    let (session, _, _) =
        super::open_session(None, None, None, &Default::default(), false).unwrap();
    let mut app = App::new(session, "demo", Theme::mono(), Keymap::default());
    app.update(Action::Resize(size.0, size.1));
    app
}

/// Each tab's screen after `keys`, checked and returned with its name.
fn every_tab(app: &mut App, keys: &str) -> Vec<(Tab, String)> {
    press(app, keys);
    settle(app);
    let mut out = Vec::new();
    for (i, tab) in Tab::ALL.into_iter().enumerate() {
        press(app, &(i + 1).to_string());
        settle(app);
        let s = screen(app);
        let bar = s.lines().nth(1).unwrap_or_default();
        for (j, t) in Tab::ALL.into_iter().enumerate() {
            assert!(
                bar.contains(&format!("{}", j + 1)),
                "tab {t:?} missing:\n{s}"
            );
        }
        assert!(
            bar.contains(tab.title()),
            "{tab:?} not named on the bar:\n{s}"
        );
        out.push((tab, s));
    }
    out
}

/// The matrix's abbreviated headers come with what they stand for, and cut columns
/// with a count.
fn check_filter(s: &str) {
    if s.contains("NRF") || s.contains(" NU ") {
        assert!(s.contains("NU NodeUnschedulable"), "no legend:\n{s}");
    }
    if !s.contains("ImageLocality") && !s.contains("PTS") && s.contains("NU ") {
        assert!(s.contains("→"), "columns cut without a mark:\n{s}");
    }
}

/// Every abbreviated plugin column shown is spelled out on the screen (`NRF
/// NodeResourcesFit`), none left to a cut legend.
fn check_legend(s: &str) {
    let lines: Vec<&str> = s.lines().collect();
    let Some(head) = lines.iter().find(|l| l.contains("Node (")) else {
        return;
    };
    let abbrevs = head
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() >= 2 && w.chars().all(|c| c.is_ascii_uppercase()));
    for a in abbrevs {
        let pat = format!("{a} ");
        let spelled = lines.iter().any(|l| {
            l.match_indices(&pat)
                .any(|(i, _)| l[i + pat.len()..].starts_with(|c: char| c.is_ascii_uppercase()))
        });
        assert!(spelled, "{a} is not spelled out:\n{s}");
    }
}

#[test]
fn every_tab_of_the_demo_at_80x24_and_120x40() {
    for (w, h) in SIZES {
        let mut app = demo_recording((w, h));
        for (tab, s) in every_tab(&mut app, "fff") {
            if tab == Tab::Filter {
                check_filter(&s);
            }
            if matches!(tab, Tab::Filter | Tab::Scores) {
                check_legend(&s);
            }
            insta::assert_snapshot!(format!("demo_{w}x{h}_{}", tab.title()), s);
        }
    }
}

#[test]
fn every_tab_of_5000_nodes_at_80x24_and_120x40() {
    for (w, h) in SIZES {
        let mut app = basic_app(5_000, 20, (w, h));
        for (tab, s) in every_tab(&mut app, "ff") {
            if tab == Tab::Filter {
                check_filter(&s);
                assert!(s.contains("5000"), "{s}");
            }
            if matches!(tab, Tab::Filter | Tab::Scores) {
                check_legend(&s);
            }
            insta::assert_snapshot!(format!("nodes5000_{w}x{h}_{}", tab.title()), s);
        }
    }
}

/// Help spells out every column abbreviation of the profiles in force, and its search
/// finds them by either form.
#[test]
fn help_has_the_plugin_column_legend() {
    let mut app = demo_recording((80, 24));
    press(&mut app, "?/NRBA");
    let s = screen(&mut app);
    assert!(s.contains("Plugin columns"), "{s}");
    assert!(
        s.lines()
            .any(|l| l.contains("NRBA") && l.contains("NodeResourcesBalancedAllocation")),
        "{s}"
    );
    press(&mut app, "\x1b\x1b?/legend");
    let s = screen(&mut app);
    for (short, name) in [("NU", "NodeUnschedulable"), ("PTS", "PodTopologySpread")] {
        assert!(
            s.lines().any(|l| l.contains(short) && l.contains(name)),
            "{short} {name}:\n{s}"
        );
    }
}

/// The header keeps the queue counts at 80×24: at the start, with a pod and its
/// extension point shown, and at a past step (the other parts give way).
#[test]
fn the_header_keeps_the_queue_counts_at_80x24() {
    let mut app = demo_recording((80, 24));
    let header = |app: &mut App| screen(app).lines().next().unwrap_or_default().to_string();
    let h = header(&mut app);
    assert!(h.contains(" act ") && h.contains(" bound "), "{h}");
    press(&mut app, "nn");
    let h = header(&mut app);
    assert!(h.contains(" act ") && h.contains(" bound "), "{h}");
    press(&mut app, "f[");
    let h = header(&mut app);
    assert!(h.contains("⏪ step"), "{h}");
    assert!(h.contains(" act ") && h.contains(" bound "), "{h}");
}
