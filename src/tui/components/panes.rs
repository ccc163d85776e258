//! The panes that take the focus as components: the left column's Queue, Cycle and
//! Waiting panes and the main pane (whose tabs are components of their own, `tabs.rs`).
//! Each pane's folder or file holds its state (a field of `App`), its keys, how it
//! handles the commands meant for it and its drawing; the registry below is the one list
//! of panes, and the dispatch from a command to the pane or tab it is meant for.

use ratatui::Frame;
use ratatui::layout::Rect;

use super::tabs::{self, MainPane};
use super::{queue::QueuePane, timeline::CyclePane, waiting::WaitingPane};
use crate::action::{Command, OwnCommand};
use crate::app::App;
use crate::session::Breakpoint;

/// Rows a page key moves.
pub const PAGE: usize = 10;

/// One pane. Every hook but `of`, `draw` and `breakpoint` has a default that does
/// nothing, so a pane implements only what it does.
pub trait PaneComponent {
    /// Default keys of the shared commands (`Command` variants) whose fallback is the
    /// pane's `command`, for the keymap.
    const KEYS: &'static [(Command, &'static [&'static str])] = &[];

    /// The pane's own commands, declared whole here (keys, help, group); they reach the
    /// pane's `command` as `Command::Own`.
    const COMMANDS: &'static [OwnCommand] = &[];

    /// The pane's state in the app.
    fn of(app: &App) -> &Self;

    /// Draws the pane, border and all, into `area`: a pure function of the pane's state
    /// and the read-only app.
    fn draw(&self, f: &mut Frame, area: Rect, app: &App);

    /// Up, down, page and wheel moves (`d` rows) while the pane has the focus.
    fn move_selection(_app: &mut App, _d: isize) {}

    /// Enter while the pane has the focus.
    fn select(_app: &mut App) {}

    /// What `b` breaks on while the pane has the focus.
    fn breakpoint(app: &App) -> Option<Breakpoint>;

    /// A click inside the pane (`area`) at screen position (`x`, `y`); the pane has the
    /// focus already.
    fn click(_app: &mut App, _area: Rect, _x: u16, _y: u16) {}

    /// The pane has just been given the focus by Tab or Shift-Tab.
    fn focused(_app: &mut App) {}

    /// A character typed at the prompt it opened (`App::prompt_for`): `text` is the line
    /// so far.
    fn prompt_input(_app: &mut App, _text: &str) {}

    /// Enter at the prompt it opened.
    fn prompt_submit(_app: &mut App, _text: &str) {}

    /// A command while the pane has the focus, before the tab shown has its say: `true`
    /// when the pane took it.
    fn focused_command(_app: &mut App, _c: Command) -> bool {
        false
    }

    /// One of the pane's own commands (`COMMANDS`, or `KEYS` it is the fallback for),
    /// whatever has the focus, once neither the focused pane nor the tab shown took it:
    /// `true` when the pane took it.
    fn command(_app: &mut App, _c: Command) -> bool {
        false
    }
}

/// Declares the panes: the `Pane` enum in focus order and the dispatch from a `Pane` to
/// its component's hooks.
macro_rules! panes {
    ($($pane:ident => $ty:ty),+ $(,)?) => {
        /// A pane that can hold the focus.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Pane {
            $($pane),+
        }

        impl Pane {
            /// Tab's order: as the panes sit on the screen (`layout::areas`), the left
            /// column from top to bottom, then the main pane.
            pub const ORDER: [Pane; [$(Pane::$pane),+].len()] = [$(Pane::$pane),+];
        }

        /// Every pane's default keys, for the keymap.
        pub const KEYS: &[&[(Command, &[&str])]] = &[$(<$ty as PaneComponent>::KEYS),+];

        /// Every pane's own commands (see `Command::ALL`).
        pub const COMMANDS: &[&[OwnCommand]] = &[$(<$ty as PaneComponent>::COMMANDS),+];

        pub fn draw(f: &mut Frame, pane: Pane, area: Rect, app: &App) {
            match pane {
                $(Pane::$pane => <$ty as PaneComponent>::of(app).draw(f, area, app)),+
            }
        }

        pub fn move_selection(app: &mut App, d: isize) {
            match app.focus {
                $(Pane::$pane => <$ty as PaneComponent>::move_selection(app, d)),+
            }
        }

        fn select(app: &mut App) {
            match app.focus {
                $(Pane::$pane => <$ty as PaneComponent>::select(app)),+
            }
        }

        pub fn breakpoint(app: &App) -> Option<Breakpoint> {
            match app.focus {
                $(Pane::$pane => <$ty as PaneComponent>::breakpoint(app)),+
            }
        }

        pub fn click(app: &mut App, area: Rect, x: u16, y: u16) {
            match app.focus {
                $(Pane::$pane => <$ty as PaneComponent>::click(app, area, x, y)),+
            }
        }

        pub fn focused(app: &mut App) {
            match app.focus {
                $(Pane::$pane => <$ty as PaneComponent>::focused(app)),+
            }
        }

        pub fn prompt_input(app: &mut App, pane: Pane, text: &str) {
            match pane {
                $(Pane::$pane => <$ty as PaneComponent>::prompt_input(app, text)),+
            }
        }

        pub fn prompt_submit(app: &mut App, pane: Pane, text: &str) {
            match pane {
                $(Pane::$pane => <$ty as PaneComponent>::prompt_submit(app, text)),+
            }
        }

        fn focused_command(app: &mut App, c: Command) -> bool {
            match app.focus {
                $(Pane::$pane => <$ty as PaneComponent>::focused_command(app, c)),+
            }
        }

        /// The panes' own commands, in focus order.
        fn own_command(app: &mut App, c: Command) -> bool {
            $(<$ty as PaneComponent>::command(app, c))||+
        }
    };
}

// The registry: one line per pane, in focus order. Where a pane sits is `layout::areas`.
panes! {
    Queue => QueuePane,
    Timeline => CyclePane,
    Waiting => WaitingPane,
    Main => MainPane,
}

/// A command that is not the app's own, to the pane or tab it is meant for: moves and
/// Enter to the focused pane; then the focused pane, the tab shown, and the panes and
/// tabs that own the command, in that order, until one takes it. `false` when none did.
pub fn command(app: &mut App, c: Command) -> bool {
    let page = PAGE as isize;
    let d = match c {
        Command::Up => -1,
        Command::Down => 1,
        Command::PageUp => -page,
        Command::PageDown => page,
        Command::Top => isize::MIN / 2,
        Command::Bottom => isize::MAX / 2,
        Command::Select => {
            select(app);
            return true;
        }
        _ => {
            return focused_command(app, c)
                || tabs::command(app, c)
                || own_command(app, c)
                || tabs::own_command(app, c);
        }
    };
    move_selection(app, d);
    true
}
