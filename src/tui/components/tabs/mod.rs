//! The main pane's tabs as components (after ratatui's component template and gitui):
//! one type per tab, in its own file or folder here, owning its drawing, its keys and its
//! state, and the registry below, the one list of tabs. The tab bar, drawing,
//! `App::update`, help and the keymap all read it; nothing else matches on `Tab`.
//!
//! A tab's state is a field of `App::tabs` (declared by the registry), so a tab's code
//! can read the session and change other state in one `&mut App`; its handlers are
//! associated functions that take the app, and its `draw` reads `&self` and `&App` only,
//! as every draw does.

use ratatui::Frame;
use ratatui::layout::Rect;

use ratatui::text::Line;

use super::panes::PaneComponent;
use super::{pane, span};
use crate::action::{Command, OwnCommand, Pane};
use crate::app::App;
use crate::layout;
use crate::session::Breakpoint;

/// What the rest of the UI knows of a tab: its title on the tab bar and the key-bindable
/// command that shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TabInfo {
    /// On the tab bar.
    pub title: &'static str,
    /// The command's name in the config file's `[keys]` table.
    pub command: &'static str,
    /// What help says the command does.
    pub help: &'static str,
    /// The command's default keys.
    pub keys: &'static [&'static str],
}

/// One tab of the main pane. Every hook but `draw` has a default that does nothing, so
/// a tab implements only what it does.
pub trait TabPane {
    const INFO: TabInfo;

    /// Sets up the tab's state once the app is made (before the first refresh).
    fn init(_app: &mut App) {}

    /// Draws the tab's body into `area` (inside the main pane's border): a pure function
    /// of the tab's state and the read-only app.
    fn draw(&self, f: &mut Frame, area: Rect, app: &App);

    /// The attempts whose full detail (matrix, scores, CycleState after each step) the
    /// tab shows, recomputed when it is shown; `None` when it shows no such detail.
    fn attempts(_app: &App) -> Option<Vec<u64>> {
        None
    }

    /// Rebuilds what the tab derives from the session and the step shown (row orders):
    /// called for every tab after each change, never while drawing.
    fn refresh(_app: &mut App) {}

    /// After every action while the tab is shown.
    fn after_update(_app: &mut App) {}

    /// Default keys of the shared commands (`Command` variants) whose fallback is the
    /// tab's `own_command`, for the keymap.
    const KEYS: &'static [(Command, &'static [&'static str])] = &[];

    /// The tab's own commands, declared whole here (keys, help, group); they reach the
    /// tab's `own_command` as `Command::Own`.
    const COMMANDS: &'static [OwnCommand] = &[];

    /// A command while the tab is shown, whichever pane has the focus, once the focused
    /// pane has not taken it (columns, filter, sort, cancel, jump to the node): `true`
    /// when the tab took it.
    fn command(_app: &mut App, _c: Command) -> bool {
        false
    }

    /// One of the tab's own commands (`COMMANDS`, or `KEYS` it is the fallback for), from
    /// any tab, once neither the focused pane, the tab shown nor the panes took it:
    /// `true` when the tab took it.
    fn own_command(_app: &mut App, _c: Command) -> bool {
        false
    }

    /// A character typed at the prompt it opened (`App::prompt_for`): `text` is the line
    /// so far.
    fn prompt_input(_app: &mut App, _text: &str) {}

    /// Enter at the prompt it opened.
    fn prompt_submit(_app: &mut App, _text: &str) {}

    /// Up, down, page and wheel moves (`d` rows) while the main pane has the focus.
    fn move_selection(_app: &mut App, _d: isize) {}

    /// Enter while the main pane has the focus.
    fn select(_app: &mut App) {}

    /// What `b` breaks on while the main pane has the focus: by default the point of
    /// the step shown.
    fn breakpoint(app: &App) -> Option<Breakpoint> {
        moment_breakpoint(app)
    }

    /// A click on the tab's body at screen row `y`; `main` is the main pane's area.
    fn click(_app: &mut App, _main: Rect, _y: u16) {}
}

/// A breakpoint on the point of the step shown.
pub fn moment_breakpoint(app: &App) -> Option<Breakpoint> {
    app.moment().map(|s| Breakpoint::Point(s.point))
}

/// The attempt of the step shown, for tabs that show its detail.
pub fn moment_attempts(app: &App) -> Option<Vec<u64>> {
    Some(app.moment().and_then(|s| s.attempt).into_iter().collect())
}

/// Declares the tabs: the `Tab` enum in tab-bar order and the dispatch from a `Tab` to
/// its component's hooks.
macro_rules! tabs {
    ($($tab:ident => $field:ident: $module:ident::$pane:ident),+ $(,)?) => {
        $(pub mod $module;)+

        /// The tabs of the main pane, in tab-bar order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Tab {
            $($tab),+
        }

        impl Tab {
            pub const ALL: [Tab; [$(Tab::$tab),+].len()] = [$(Tab::$tab),+];

            pub fn info(self) -> &'static TabInfo {
                match self {
                    $(Tab::$tab => &<$module::$pane as TabPane>::INFO),+
                }
            }

            pub fn title(self) -> &'static str {
                self.info().title
            }
        }

        /// Every tab's state: `App::tabs`, one field per tab.
        #[derive(Debug, Default)]
        pub struct TabStates {
            $(pub $field: $module::$pane),+
        }

        /// Every tab's `init`, in tab-bar order.
        pub fn init(app: &mut App) {
            $(<$module::$pane as TabPane>::init(app);)+
        }

        /// The shown tab's body.
        pub fn draw(f: &mut Frame, area: Rect, app: &App) {
            match app.tab {
                $(Tab::$tab => app.tabs.$field.draw(f, area, app)),+
            }
        }

        /// The attempts the shown tab needs in full (see `TabPane::attempts`).
        pub fn attempts(app: &App) -> Option<Vec<u64>> {
            match app.tab {
                $(Tab::$tab => <$module::$pane as TabPane>::attempts(app)),+
            }
        }

        /// Every tab's `refresh`, in tab-bar order.
        pub fn refresh(app: &mut App) {
            $(<$module::$pane as TabPane>::refresh(app);)+
        }

        pub fn after_update(app: &mut App) {
            match app.tab {
                $(Tab::$tab => <$module::$pane as TabPane>::after_update(app)),+
            }
        }

        pub fn command(app: &mut App, c: Command) -> bool {
            match app.tab {
                $(Tab::$tab => <$module::$pane as TabPane>::command(app, c)),+
            }
        }

        /// The tabs' own commands, in tab-bar order.
        pub fn own_command(app: &mut App, c: Command) -> bool {
            $(<$module::$pane as TabPane>::own_command(app, c))||+
        }

        /// Every tab's default keys, for the keymap.
        pub const KEYS: &[&[(Command, &[&str])]] = &[$(<$module::$pane as TabPane>::KEYS),+];

        /// Every tab's own commands (see `Command::ALL`).
        pub const COMMANDS: &[&[OwnCommand]] = &[$(<$module::$pane as TabPane>::COMMANDS),+];

        pub fn prompt_input(app: &mut App, tab: Tab, text: &str) {
            match tab {
                $(Tab::$tab => <$module::$pane as TabPane>::prompt_input(app, text)),+
            }
        }

        pub fn prompt_submit(app: &mut App, tab: Tab, text: &str) {
            match tab {
                $(Tab::$tab => <$module::$pane as TabPane>::prompt_submit(app, text)),+
            }
        }

        pub fn move_selection(app: &mut App, d: isize) {
            match app.tab {
                $(Tab::$tab => <$module::$pane as TabPane>::move_selection(app, d)),+
            }
        }

        pub fn select(app: &mut App) {
            match app.tab {
                $(Tab::$tab => <$module::$pane as TabPane>::select(app)),+
            }
        }

        pub fn breakpoint(app: &App) -> Option<Breakpoint> {
            match app.tab {
                $(Tab::$tab => <$module::$pane as TabPane>::breakpoint(app)),+
            }
        }

        pub fn click(app: &mut App, main: Rect, y: u16) {
            match app.tab {
                $(Tab::$tab => <$module::$pane as TabPane>::click(app, main, y)),+
            }
        }
    };
}

/// The main pane as a pane: the tab bar and the tab shown, which handles its moves,
/// Enter, `b` and clicks.
pub struct MainPane;

impl PaneComponent for MainPane {
    fn of(_: &App) -> &Self {
        &MainPane
    }

    fn draw(&self, f: &mut Frame, area: Rect, app: &App) {
        let t = &app.theme;
        let focused = app.focus == Pane::Main;
        let mut spans = Vec::new();
        for (label, tab) in layout::tab_labels(area.width, app.tab)
            .into_iter()
            .zip(Tab::ALL)
        {
            let style = if tab == app.tab {
                t.selection
            } else if focused {
                t.focus
            } else {
                t.title
            };
            spans.push(span(label, style));
            spans.push(span("│", t.border));
        }
        let block = pane(app, Line::from(spans), focused);
        let inner = block.inner(area);
        f.render_widget(block, area);
        draw(f, inner, app);
    }

    fn move_selection(app: &mut App, d: isize) {
        move_selection(app, d)
    }

    fn select(app: &mut App) {
        select(app)
    }

    fn breakpoint(app: &App) -> Option<Breakpoint> {
        breakpoint(app)
    }

    /// On the tab bar: that tab; else the tab shown's click.
    fn click(app: &mut App, area: Rect, x: u16, y: u16) {
        if y == area.y
            && let Some(t) = layout::tab_at(area, x, app.tab)
        {
            app.tab = t;
            return;
        }
        click(app, area, y);
    }
}

// The registry: one line per tab, in tab-bar order (the number keys follow it only
// through each tab's `INFO.keys`): the name of its state in `App::tabs`, and its module
// (a file or folder here, declared by this line) and type.
tabs! {
    Filter => filter: filter::FilterTab,
    Scores => scores: scores::ScoresTab,
    State => state: state_tree::StateTab,
    Explain => explain: explain::ExplainTab,
    Detail => detail: detail::DetailTab,
    Logs => logs: logs::LogsTab,
    WhatIf => whatif: whatif::WhatIfTab,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keymap::{Key, Keymap};
    use crate::layout;

    /// The registry, the tab bar, the keymap and help agree: each tab is on the bar
    /// where a click finds it, has a command that its default keys run, and is in help.
    #[test]
    fn registry_tab_bar_keymap_and_help_agree() {
        let km = Keymap::default();
        let help = km.help_groups();
        let tabs_group = help
            .iter()
            .find(|(g, _)| *g == "Tabs")
            .map(|(_, e)| e.clone())
            .unwrap_or_default();
        assert_eq!(tabs_group.len(), Tab::ALL.len(), "{tabs_group:?}");
        let main = Rect::new(0, 0, 200, 10);
        let mut x = main.x + 1;
        let mut names = std::collections::HashSet::new();
        let labels = layout::tab_labels(main.width, Tab::Filter);
        for (label, tab) in labels.into_iter().zip(Tab::ALL) {
            let info = tab.info();
            assert!(label.contains(info.title), "{label}");
            assert_eq!(layout::tab_at(main, x, Tab::Filter), Some(tab), "{label}");
            x += label.chars().count() as u16 + 1;
            let cmd = Command::ShowTab(tab);
            assert!(Command::ALL.contains(&cmd), "{tab:?}");
            assert_eq!(Command::from_name(info.command), Some(cmd));
            assert!(names.insert(info.command), "{} twice", info.command);
            assert_eq!(cmd.describe(), info.help);
            assert!(!info.keys.is_empty(), "{tab:?} has no default key");
            for k in info.keys {
                let key = Key::parse(k).unwrap();
                assert!(km.keys_for(cmd).contains(&key), "{tab:?}: {k} not bound");
            }
            assert!(
                tabs_group.iter().any(|(_, c)| *c == cmd),
                "{tab:?} missing from help"
            );
        }
    }
}
