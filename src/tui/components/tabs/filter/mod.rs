//! Filter matrix: nodes × Filter plugins, ✓ pass, ✗ reject, – skipped (PreFilter said
//! Skip), ! error, · not run yet at this moment; `✗*` marks upstream's first failure on
//! a node (the real scheduler stops there). Nodes upstream's search never reached (it
//! stops once it has enough feasible nodes) are dimmed, their verdicts in parentheses.
//! The selected cell's reason and the exact kube-scheduler message are shown below.
//! Only visible rows are built.
//!
//! The Filter tab: its rows (filtered and sorted), the selected cell, and its keys
//! (columns, `/` filter, `o` sort, Enter opens the node, `*` the chosen node).

pub mod draw;
pub mod order;

use ratatui::Frame;
use ratatui::layout::Rect;

use super::{TabInfo, TabPane, moment_attempts};
use crate::action::{Command, Pane, Tab};
use crate::app::{App, PromptOwner, clamp, step};
use crate::components::Elider;
use crate::layout;
use crate::session::Breakpoint;
use crate::step_shown;
use order::MatrixSort;

/// The Filter tab's state: the matrix rows after the node filter and sort, and the
/// selected cell.
#[derive(Debug, Default)]
pub struct FilterTab {
    pub sort: MatrixSort,
    pub filter: String,
    /// Matrix rows in display order, for `key`.
    pub order: Vec<usize>,
    pub key: Option<(u64, usize, usize, MatrixSort, String, usize)>,
    /// Nodes each plugin rejected (the counts above the matrix), with `order`.
    pub rejections: Vec<usize>,
    pub row: usize,
    pub col: usize,
    /// The matrix's node names to shorten, for the attempt and node count they are of.
    pub names: Option<((u64, usize), Elider)>,
}

impl TabPane for FilterTab {
    const INFO: TabInfo = TabInfo {
        title: "Filter",
        command: "tab-filter",
        help: "Filter matrix",
        keys: &["1"],
    };

    // The Scores tab's columns move with the same keys.
    const KEYS: &'static [(Command, &'static [&'static str])] = &[
        (Command::ColumnLeft, &["h", "left", "H", "<"]),
        (Command::ColumnRight, &["l", "right", "L", ">"]),
        (Command::JumpNode, &["*"]),
    ];

    fn draw(&self, f: &mut Frame, area: Rect, app: &App) {
        draw::draw(self, f, area, app)
    }

    fn attempts(app: &App) -> Option<Vec<u64>> {
        moment_attempts(app)
    }

    /// Rebuilds the row order when the attempt, its columns at the step shown, the
    /// sort or the filter changed.
    fn refresh(app: &mut App) {
        let Some(step) = app.moment() else {
            app.tabs.filter.order.clear();
            app.tabs.filter.key = None;
            return;
        };
        let Some(a) = app.moment_attempt() else {
            app.tabs.filter.order.clear();
            app.tabs.filter.key = None;
            return;
        };
        let Some(m) = a.matrix else {
            app.tabs.filter.order.clear();
            app.tabs.filter.key = None;
            return;
        };
        let cols = step_shown::filter_columns(step, m).unwrap_or(0);
        // The selected column matters only to the by-plugin sort.
        let col = if app.tabs.filter.sort == MatrixSort::ByPlugin {
            app.tabs.filter.col
        } else {
            usize::MAX
        };
        let key = (
            a.id,
            m.nodes.len(),
            cols,
            app.tabs.filter.sort,
            app.tabs.filter.filter.clone(),
            col,
        );
        if app.tabs.filter.key.as_ref() == Some(&key) {
            return;
        }
        let names = a.names;
        // Names are shortened against all the matrix's nodes, whatever the filter shows.
        let of = (a.id, m.nodes.len());
        let new_names = (app.tabs.filter.names.as_ref().map(|n| n.0) != Some(of))
            .then(|| Elider::of(m.nodes.iter().map(|&n| names.get(n))));
        let order = order::matrix_order(
            m,
            |i| names.get(i).to_string(),
            cols,
            app.tabs.filter.sort,
            &app.tabs.filter.filter,
            col,
        );
        let rejections = order::rejections_per_plugin(m, cols);
        let plugins = m.plugins.len();
        app.tabs.filter.order = order;
        if let Some(names) = new_names {
            app.tabs.filter.names = Some((of, names));
        }
        app.tabs.filter.rejections = rejections;
        app.tabs.filter.key = Some(key);
        clamp(&mut app.tabs.filter.row, app.tabs.filter.order.len());
        clamp(&mut app.tabs.filter.col, plugins);
    }

    fn command(app: &mut App, c: Command) -> bool {
        match c {
            Command::ColumnLeft | Command::ColumnRight => {
                let d: isize = if c == Command::ColumnLeft { -1 } else { 1 };
                let n = app
                    .moment_attempt()
                    .and_then(|a| a.matrix)
                    .map_or(0, |m| m.plugins.len());
                app.tabs.filter.col = step(app.tabs.filter.col, d, n);
                Self::refresh(app);
            }
            Command::Filter if app.focus == Pane::Main => {
                let text = app.tabs.filter.filter.clone();
                app.prompt_for(PromptOwner::Tab(Tab::Filter), "filter nodes /", text);
            }
            Command::Sort if app.focus == Pane::Main => {
                app.tabs.filter.sort = app.tabs.filter.sort.next();
                Self::refresh(app);
                app.info(format!("nodes sorted: {}", app.tabs.filter.sort.label()));
            }
            Command::Cancel if !app.tabs.filter.filter.is_empty() => {
                Self::set_filter(app, String::new())
            }
            Command::JumpNode => Self::jump_to_chosen_node(app),
            _ => return false,
        }
        true
    }

    /// The node filter applies as it is typed.
    fn prompt_input(app: &mut App, text: &str) {
        Self::set_filter(app, text.to_string());
    }

    fn move_selection(app: &mut App, d: isize) {
        app.tabs.filter.row = step(app.tabs.filter.row, d, app.tabs.filter.order.len());
    }

    /// Enter: the selected node in the Detail tab.
    fn select(app: &mut App) {
        let node = app.moment_attempt().and_then(|a| {
            let m = a.matrix?;
            let r = *app.tabs.filter.order.get(app.tabs.filter.row)?;
            Some(a.names.get(*m.nodes.get(r)?).to_string())
        });
        super::detail::DetailTab::show_node(app, node);
    }

    /// `b`: the selected column's plugin.
    fn breakpoint(app: &App) -> Option<Breakpoint> {
        app.moment_attempt()
            .and_then(|a| a.matrix)
            .and_then(|m| m.plugins.get(app.tabs.filter.col))
            .map(|p| Breakpoint::Plugin(p.to_string()))
    }

    fn click(app: &mut App, main: Rect, y: u16) {
        let inner = crate::components::inner(main);
        let below =
            draw::geometry(&app.tabs.filter, app, inner).map_or(2, |g| g.footer_rows(inner));
        let header = draw::HEADER_ROWS;
        if let Some(i) = layout::row_at(main, header, below, y, app.tabs.filter.row) {
            app.tabs.filter.row = i.min(app.tabs.filter.order.len().saturating_sub(1));
        }
    }

    /// `*` from a tab that has no row for the node: this tab's. Columns keys no tab
    /// shown took: where the time travel they once did went.
    fn own_command(app: &mut App, c: Command) -> bool {
        match c {
            Command::JumpNode => Self::jump_to_chosen_node(app),
            Command::ColumnLeft | Command::ColumnRight => {
                let k = &app.keymap;
                let msg = format!(
                    "{} {} move across columns in the Filter and Scores tabs; {} {} travel in time",
                    k.key(Command::ColumnLeft),
                    k.key(Command::ColumnRight),
                    k.key(Command::Back),
                    k.key(Command::Forward)
                );
                app.info(msg);
            }
            _ => return false,
        }
        true
    }
}

impl FilterTab {
    /// The node filter, as typed at its prompt (applied as it is typed).
    pub fn set_filter(app: &mut App, text: String) {
        app.tabs.filter.filter = text;
        Self::refresh(app);
    }

    /// `*`: the Filter tab, with the row of the node the attempt shown chose (bound to,
    /// or kubestep's pick) selected, clearing a node filter that hides it.
    pub fn jump_to_chosen_node(app: &mut App) {
        let Some(node) = chosen_node(app) else {
            return;
        };
        // The row as the attempt shown has it before the tab is shown (and its detail
        // recomputed).
        let matrix_row = app.moment_attempt().and_then(|a| {
            let names = a.names;
            a.matrix?.nodes.iter().position(|&n| names.get(n) == node)
        });
        app.show_tab(Tab::Filter);
        let Some(r) = matrix_row else {
            app.error(format!("{node} is not in this attempt's Filter matrix"));
            return;
        };
        if !app.tabs.filter.order.contains(&r) && !app.tabs.filter.filter.is_empty() {
            app.tabs.filter.filter.clear();
            Self::refresh(app);
        }
        if let Some(i) = app.tabs.filter.order.iter().position(|&i| i == r) {
            app.tabs.filter.row = i;
            app.info(format!("{node}: the node this attempt chose"));
        }
    }
}

/// The node the attempt shown chose (bound to, or kubestep's pick); says why not when
/// there is none.
pub fn chosen_node(app: &mut App) -> Option<String> {
    let Some(a) = app.moment_attempt() else {
        app.error("no attempt shown");
        return None;
    };
    let Some(node) = a.node.map(str::to_string) else {
        let msg = format!("{} was not placed on a node in this attempt", a.pod);
        app.error(msg);
        return None;
    };
    Some(node)
}
