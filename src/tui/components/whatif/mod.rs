//! The What-if tab: the same pod re-run with a changed configuration (a plugin disabled,
//! a score weight changed) and changed pod or node fields, next to the real one. Marked
//! WHAT-IF: none of it is in the history.
//!
//! Its state is `WhatIfTab` (below); `actions.rs` holds its commands, `compare.rs` the
//! edits and the re-run on the background worker, `fields.rs` the field edits typed at
//! its prompt, `draw.rs` its drawing.

pub mod actions;
pub mod compare;
mod draw;
pub mod fields;

use ratatui::Frame;
use ratatui::layout::Rect;

use super::tabs::{TabInfo, TabPane};
use crate::action::{Command, Tab};
use crate::app::{App, PromptKind, step};
use compare::{Comparison, Edits, PluginRow};
use kubestep_engine::config::KubeSchedulerConfiguration;

/// The What-if tab's state.
#[derive(Debug, Default)]
pub struct WhatIfTab {
    pub plugins: Vec<PluginRow>,
    pub selected: usize,
    pub edits: Edits,
    /// The alternative configuration (`--compare FILE`), else the session's.
    pub alt: Option<(String, KubeSchedulerConfiguration)>,
    pub result: Option<Result<Comparison, String>>,
    /// The re-run under way on the background worker, and its pod.
    pub job: Option<(u64, String)>,
}

impl TabPane for WhatIfTab {
    const INFO: TabInfo = TabInfo {
        title: "What-if",
        command: "tab-what-if",
        help: "What-if and compare",
        keys: &["7", "w"],
    };

    const KEYS: &'static [(Command, &'static [&'static str])] = &[
        (Command::WhatIfToggle, &["x"]),
        (Command::WeightUp, &["ctrl-up", "K"]),
        (Command::WeightDown, &["ctrl-down"]),
        (Command::WhatIfRun, &["R"]),
        (Command::WhatIfField, &["e"]),
        (Command::WhatIfUndo, &["u"]),
    ];

    fn of(app: &App) -> &Self {
        &app.whatif
    }

    /// The what-if commands work from any tab (`e` shows this one).
    fn own_command(app: &mut App, c: Command) -> bool {
        match c {
            Command::WhatIfToggle | Command::WeightUp | Command::WeightDown => app.edit_what_if(c),
            Command::WhatIfRun => app.run_what_if(),
            Command::WhatIfField => {
                app.show_tab(Tab::WhatIf);
                app.prompt(PromptKind::WhatIfField);
            }
            Command::WhatIfUndo => app.undo_field_edit(),
            _ => return false,
        }
        true
    }

    fn draw(&self, f: &mut Frame, area: Rect, app: &App) {
        draw::draw(self, f, area, app)
    }

    fn move_selection(app: &mut App, d: isize) {
        app.whatif.selected = step(app.whatif.selected, d, app.whatif.plugins.len());
    }

    /// Enter: re-runs the pod.
    fn select(app: &mut App) {
        app.run_what_if();
    }
}
