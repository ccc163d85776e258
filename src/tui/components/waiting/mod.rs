//! The Waiting pane: pods held at Permit, one row per plugin. `a` allows the selected
//! pod for the plugin, `A` for every plugin, `r` rejects it (asking a message); Enter
//! shows the pod. At a past step it lists who waited then (the Queue pane's `refresh`
//! fills both) and refuses `a` / `r`.

mod draw;

use ratatui::Frame;
use ratatui::layout::Rect;

use super::panes::PaneComponent;
use super::tabs::detail::DetailTarget;
use super::tabs::{Tab, moment_breakpoint};
use crate::action::{Command, OwnCommand, Pane};
use crate::app::{App, PromptOwner, step};
use crate::components::queue::pods::WaitingRow;
use crate::layout;
use crate::session::Breakpoint;

const GROUP: &str = "Waiting at Permit";

/// The pane's own commands.
const OWN: [OwnCommand; 3] = [
    OwnCommand {
        name: "allow",
        help: "allow the selected waiting pod for this plugin",
        group: GROUP,
        keys: &["a"],
        synonyms: &["approve", "permit", "accept"],
    },
    OwnCommand {
        name: "allow-all",
        help: "allow the selected waiting pod for every plugin",
        group: GROUP,
        keys: &["A"],
        synonyms: &["approve all", "permit all"],
    },
    OwnCommand {
        name: "reject",
        help: "reject the selected waiting pod (asks a message)",
        group: GROUP,
        keys: &["r"],
        synonyms: &["deny", "refuse", "decline"],
    },
];
pub const ALLOW: Command = Command::Own(&OWN[0]);
pub const ALLOW_ALL: Command = Command::Own(&OWN[1]);
pub const REJECT: Command = Command::Own(&OWN[2]);

/// The Waiting pane's state.
#[derive(Debug, Default)]
pub struct WaitingPane {
    pub rows: Vec<WaitingRow>,
    pub selected: usize,
    /// The pod (and the plugin, unless allowed by it) whose reject message is asked.
    pub rejecting: Option<(String, Option<String>)>,
}

impl WaitingPane {
    pub fn selected_row(&self) -> Option<&WaitingRow> {
        self.rows.get(self.selected)
    }

    /// `a`, `A` and `r` act on pods waiting now: refused at a past step, whose waiting
    /// list is history. True when refused.
    fn refuse_in_past(app: &mut App, what: &str) -> bool {
        let Some(seq) = app.cursor else {
            return false;
        };
        let end = app.keymap.key(Command::Live);
        app.error(format!(
            "{what} acts on pods waiting now, not at step {seq} shown: {end} returns to the present"
        ));
        true
    }

    fn allow(app: &mut App, all: bool) {
        let Some(w) = app.waiting.selected_row().cloned() else {
            app.error("no waiting pod selected");
            return;
        };
        let plugin = (!all && !w.allowed).then_some(w.plugin.as_str());
        match app.session.allow(&w.pod, plugin) {
            Ok(()) => {
                let what = plugin.map(|p| format!(" by {p}")).unwrap_or_default();
                Self::resume(app, format!("{} allowed{what}", w.pod));
            }
            Err(e) => app.error(e.to_string()),
        }
    }

    /// The reject prompt's answer: `text` is the message.
    fn reject(app: &mut App, pod: &str, plugin: Option<&str>, text: &str) {
        match app.session.reject(pod, plugin, text) {
            Ok(()) => {
                let shown = if text.is_empty() {
                    "rejected by the user"
                } else {
                    text
                };
                Self::resume(app, format!("{pod} rejected: {shown}"));
            }
            Err(e) => app.error(e.to_string()),
        }
    }

    /// After allow / reject: when the wait is over and no other pod is mid-attempt, run
    /// the parked attempt on (bind, or Unreserve and requeue) so the result shows at once.
    fn resume(app: &mut App, msg: String) {
        let s = &app.session;
        let decided = s.parked().values().any(|a| a.wait_decided(s.waiting()));
        let mut msg = msg;
        if decided && app.session.current.is_none() {
            let steps = app.session.finish_pod();
            if let Some(last) = steps.last() {
                msg.push_str(&format!(
                    " → {} {}",
                    last.point.as_str(),
                    if last.code == crate::framework::Code::Success {
                        "done"
                    } else {
                        "failed"
                    }
                ));
            }
            if let Some(p) = steps.last().and_then(|s| s.pod.clone())
                && let Some(r) = app.session.record(&p)
            {
                msg.push_str(&format!(
                    " ({:?}{})",
                    r.status,
                    r.node
                        .as_ref()
                        .map(|n| format!(" on {n}"))
                        .unwrap_or_default()
                ));
            }
        } else if decided {
            msg.push_str(" (resumes after the current pod)");
        }
        if app.shadow() {
            msg.push_str(" (simulated: shadow mode writes nothing)");
        }
        app.cursor = None;
        app.info(msg);
        app.refresh();
    }
}

impl PaneComponent for WaitingPane {
    const COMMANDS: &'static [OwnCommand] = &OWN;

    fn of(app: &App) -> &Self {
        &app.waiting
    }

    fn draw(&self, f: &mut Frame, area: Rect, app: &App) {
        draw::draw(f, area, app)
    }

    fn move_selection(app: &mut App, d: isize) {
        app.waiting.selected = step(app.waiting.selected, d, app.waiting.rows.len())
    }

    fn select(app: &mut App) {
        if let Some(p) = app.waiting.selected_row().map(|w| w.pod.clone()) {
            app.tabs.detail.target = Some(DetailTarget::Pod(p));
            app.show_tab(Tab::Detail);
        }
    }

    fn breakpoint(app: &App) -> Option<Breakpoint> {
        moment_breakpoint(app)
    }

    /// The reject message, entered.
    fn prompt_submit(app: &mut App, text: &str) {
        if let Some((pod, plugin)) = app.waiting.rejecting.take() {
            Self::reject(app, &pod, plugin.as_deref(), text);
        }
    }

    fn click(app: &mut App, area: Rect, _x: u16, y: u16) {
        if let Some(i) = layout::row_at(area, 0, 0, y, app.waiting.selected) {
            app.waiting.selected = i.min(app.waiting.rows.len().saturating_sub(1));
        }
    }

    fn command(app: &mut App, c: Command) -> bool {
        match c {
            _ if c == ALLOW || c == ALLOW_ALL => {
                if !Self::refuse_in_past(app, "allow") {
                    Self::allow(app, c == ALLOW_ALL)
                }
            }
            _ if c != REJECT => return false,
            _ if Self::refuse_in_past(app, "reject") => {}
            _ => match app.waiting.selected_row() {
                Some(w) => {
                    let (pod, plugin) = (w.pod.clone(), (!w.allowed).then(|| w.plugin.clone()));
                    let at = plugin.as_ref().map(|p| format!(" at {p}"));
                    let label = format!("reject {pod}{} — message: ", at.unwrap_or_default());
                    app.waiting.rejecting = Some((pod, plugin));
                    app.prompt_for(PromptOwner::Pane(Pane::Waiting), &label, String::new());
                }
                None => app.error("no waiting pod selected"),
            },
        }
        true
    }
}
