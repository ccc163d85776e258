//! CycleState: every entry as a tree (tui-tree-widget), as it was after the step shown;
//! entries that step added or changed are marked `±` and highlighted.
//!
//! The State tab: which entries are open and which is selected.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use tui_tree_widget::{Tree, TreeItem, TreeState};

use std::collections::HashSet;

use super::{TabInfo, TabPane, moment_attempts};
use crate::components::{fit, span};
use crate::action::Pane;
use crate::app::{App, step};
use crate::framework::StateTree;
use crate::theme::Theme;

/// The State tab's state: which entries are open and which is selected, as index paths
/// (so it survives moving through time).
#[derive(Debug, Default)]
pub struct StateTab {
    pub opened: HashSet<Vec<usize>>,
    pub selected: Vec<usize>,
}

impl TabPane for StateTab {
    const INFO: TabInfo = TabInfo {
        title: "State",
        command: "tab-state",
        help: "CycleState tree",
        keys: &["3"],
    };

    fn draw(&self, f: &mut Frame, area: Rect, app: &App) {
        draw(self, f, area, app)
    }

    fn attempts(app: &App) -> Option<Vec<u64>> {
        moment_attempts(app)
    }

    /// The selection follows the tree as the step shown changes it.
    fn refresh(app: &mut App) {
        keep_selection(app);
    }

    /// The tree arrives when the tab is first shown (its attempt is recomputed then).
    fn after_update(app: &mut App) {
        keep_selection(app);
    }

    fn move_selection(app: &mut App, d: isize) {
        let visible = visible_paths(app);
        let i = visible
            .iter()
            .position(|p| *p == app.tabs.state.selected)
            .unwrap_or(0);
        if let Some(p) = visible.get(step(i, d, visible.len())) {
            app.tabs.state.selected = p.clone();
        }
    }

    /// Enter: opens or closes the selected entry.
    fn select(app: &mut App) {
        let sel = app.tabs.state.selected.clone();
        if !sel.is_empty() && !app.tabs.state.opened.remove(&sel) {
            app.tabs.state.opened.insert(sel);
        }
    }
}

/// Keeps the selection on a row the tree shows, so Enter always has an entry to open:
/// the same entry while it is shown, else the nearest row above where it was (a sibling
/// or its parent), else the first entry. With no tree shown the selection waits.
fn keep_selection(app: &mut App) {
    let visible = visible_paths(app);
    if visible.is_empty() || visible.contains(&app.tabs.state.selected) {
        return;
    }
    // Rows are in index-path order, so "above" is "a smaller path".
    let above = visible.iter().rfind(|p| **p <= app.tabs.state.selected);
    app.tabs.state.selected = above.unwrap_or(&visible[0]).clone();
}

/// The entry name a step's `changed` list uses: the label up to its first colon.
fn entry_name(label: &str) -> &str {
    label.split(':').next().unwrap_or(label)
}

/// Columns the tree widget takes before an entry's text: its open/closed mark, plus two
/// per level of depth.
const MARK: usize = 2;
const INDENT: usize = 2;

/// One entry and its children, each label cut (marked `…`) to the `room` its depth leaves.
fn item<'a>(
    t: &Theme,
    node: &'a StateTree,
    id: usize,
    changed: bool,
    room: usize,
) -> TreeItem<'a, usize> {
    let text: Line = if changed {
        Line::from(vec![
            span("± ", t.changed),
            Span::styled(fit(&node.label, room.saturating_sub(2)), t.changed),
        ])
    } else {
        Line::from(Span::styled(fit(&node.label, room), t.base))
    };
    let children: Vec<TreeItem<usize>> = node
        .children
        .iter()
        .enumerate()
        .map(|(i, c)| item(t, c, i, false, room.saturating_sub(INDENT)))
        .collect();
    // Identifiers are sibling positions, unique by construction.
    TreeItem::new(id, text.clone(), children).unwrap_or_else(|_| TreeItem::new_leaf(id, text))
}

/// Index paths of the rows shown, given which entries are open.
pub fn visible_paths(app: &App) -> Vec<Vec<usize>> {
    let Some(state) = app.moment_state() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    fn walk(nodes: &[StateTree], prefix: &mut Vec<usize>, app: &App, out: &mut Vec<Vec<usize>>) {
        for (i, n) in nodes.iter().enumerate() {
            prefix.push(i);
            out.push(prefix.clone());
            if app.tabs.state.opened.contains(prefix) {
                walk(&n.children, prefix, app, out);
            }
            prefix.pop();
        }
    }
    walk(&state, &mut Vec::new(), app, &mut out);
    out
}

fn draw(tab: &StateTab, f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let Some(step) = app.moment() else {
        f.render_widget(Paragraph::new(span("no step yet", t.muted)), area);
        return;
    };
    let Some(state) = app.moment_state() else {
        let why = match step.attempt {
            None => "no CycleState for this step (not part of a pod's attempt)".to_string(),
            Some(id) => match app.full_error(id) {
                Some(e) => format!("CycleState cannot be shown: {e}"),
                None => "CycleState is computed when this tab is shown".to_string(),
            },
        };
        f.render_widget(Paragraph::new(span(why, t.muted)), area);
        return;
    };
    if state.is_empty() {
        f.render_widget(
            Paragraph::new(span(
                format!("CycleState is empty after {}", step.point.as_str()),
                t.muted,
            )),
            area,
        );
        return;
    }
    let items: Vec<TreeItem<usize>> = state
        .iter()
        .enumerate()
        .map(|(i, n)| {
            item(
                t,
                n,
                i,
                step.changed.iter().any(|c| *c == entry_name(&n.label)),
                (area.width as usize).saturating_sub(MARK),
            )
        })
        .collect();
    let Ok(tree) = Tree::new(&items) else {
        return;
    };
    let focused = app.focus == Pane::Main;
    let tree = tree
        .highlight_style(if focused { t.selection } else { t.base })
        .style(t.base);
    // The widget's state is rebuilt from the app's (opened, selected) each frame, so
    // drawing stays a function of `&App`.
    let mut ts = TreeState::default();
    for p in &tab.opened {
        ts.open(p.clone());
    }
    if !tab.selected.is_empty() {
        ts.select(tab.selected.clone());
    }
    f.render_stateful_widget(tree, area, &mut ts);
}
