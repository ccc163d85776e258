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

use super::{TabInfo, TabPane};
use crate::action::{Command, OwnCommand, Tab};
use crate::app::{App, PromptOwner, step};
use compare::{Comparison, Edits, PluginRow};
use kubestep_engine::config::KubeSchedulerConfiguration;

const GROUP: &str = "What-if tab";

/// The tab's own commands.
const OWN: [OwnCommand; 6] = [
    OwnCommand {
        name: "what-if-toggle",
        help: "what-if: enable / disable the plugin",
        group: GROUP,
        keys: &["x"],
        synonyms: &["disable", "enable"],
    },
    OwnCommand {
        name: "weight-up",
        help: "what-if: raise the score weight",
        group: GROUP,
        keys: &["ctrl-up", "K"],
        synonyms: &["priority", "importance"],
    },
    OwnCommand {
        name: "weight-down",
        help: "what-if: lower the score weight",
        group: GROUP,
        keys: &["ctrl-down"],
        synonyms: &["priority", "importance"],
    },
    OwnCommand {
        name: "what-if-run",
        help: "what-if: re-run the pod with both configurations",
        group: GROUP,
        keys: &["R"],
        synonyms: &["simulate", "compare"],
    },
    OwnCommand {
        name: "what-if-edit",
        help: "what-if: edit a pod or node field (requests, toleration, nodeSelector, labels, taints, allocatable)",
        group: GROUP,
        keys: &["e"],
        synonyms: &["modify", "change"],
    },
    OwnCommand {
        name: "what-if-undo",
        help: "what-if: undo the last field edit",
        group: GROUP,
        keys: &["u"],
        synonyms: &["revert"],
    },
];
pub const TOGGLE: Command = Command::Own(&OWN[0]);
pub const WEIGHT_UP: Command = Command::Own(&OWN[1]);
pub const WEIGHT_DOWN: Command = Command::Own(&OWN[2]);
pub const RUN: Command = Command::Own(&OWN[3]);
pub const EDIT: Command = Command::Own(&OWN[4]);
pub const UNDO: Command = Command::Own(&OWN[5]);

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
    /// The plugins of the session's first profile, to edit.
    fn init(app: &mut App) {
        app.tabs.whatif.plugins = compare::plugin_rows(&app.session);
    }

    const INFO: TabInfo = TabInfo {
        title: "What-if",
        command: "tab-what-if",
        help: "What-if and compare",
        keys: &["7", "w"],
    };

    const COMMANDS: &'static [OwnCommand] = &OWN;

    /// The what-if commands work from any tab (`e` shows this one).
    fn own_command(app: &mut App, c: Command) -> bool {
        match c {
            _ if c == TOGGLE || c == WEIGHT_UP || c == WEIGHT_DOWN => app.edit_what_if(c),
            _ if c == RUN => app.run_what_if(),
            _ if c == EDIT => {
                app.show_tab(Tab::WhatIf);
                let label = "what-if edit (pod request|toleration|selector, node NAME label|untaint|allocatable): ";
                app.prompt_for(PromptOwner::Tab(Tab::WhatIf), label, String::new());
            }
            _ if c == UNDO => app.undo_field_edit(),
            _ => return false,
        }
        true
    }

    fn draw(&self, f: &mut Frame, area: Rect, app: &App) {
        draw::draw(self, f, area, app)
    }

    /// A field edit, entered.
    fn prompt_submit(app: &mut App, text: &str) {
        app.add_field_edit(text);
    }

    fn move_selection(app: &mut App, d: isize) {
        app.tabs.whatif.selected = step(app.tabs.whatif.selected, d, app.tabs.whatif.plugins.len());
    }

    /// Enter: re-runs the pod.
    fn select(app: &mut App) {
        app.run_what_if();
    }
}
