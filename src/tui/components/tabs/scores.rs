//! Scores: feasible nodes × Score plugins (and extenders), raw, normalized or weighted
//! (`v` toggles), with the total and rank; `★` the node selected, `=` nodes tied with it.
//!
//! The Score tab: its rows (by total), the selected cell, the score view, and its keys
//! (columns, Enter opens the node, `*` the chosen node).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::filter::chosen_node;
use super::filter::draw::Columns;
use super::{TabInfo, TabPane, moment_attempts};
use crate::components::{Elider, fit, span, wrap_hanging};
use crate::action::{Command, Pane};
use crate::app::{App, clamp, step};
use crate::framework::cycle::ScoreTable;
use crate::layout;
use crate::session::Breakpoint;
use crate::step_shown;

const COL: usize = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScoreMode {
    Raw,
    Normalized,
    #[default]
    Weighted,
}

impl ScoreMode {
    pub fn next(self) -> ScoreMode {
        match self {
            ScoreMode::Raw => ScoreMode::Normalized,
            ScoreMode::Normalized => ScoreMode::Weighted,
            ScoreMode::Weighted => ScoreMode::Raw,
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            ScoreMode::Raw => "raw",
            ScoreMode::Normalized => "normalized",
            ScoreMode::Weighted => "weighted",
        }
    }
}

/// The Score tab's state: the rows by total, the selected cell and the score view.
#[derive(Debug, Default)]
pub struct ScoresTab {
    pub mode: ScoreMode,
    pub order: Vec<usize>,
    pub key: Option<(u64, u64)>,
    pub row: usize,
    pub col: usize,
    /// The scored nodes' names to shorten, for the attempt they are of.
    pub names: Option<(u64, Elider)>,
}

impl TabPane for ScoresTab {
    const INFO: TabInfo = TabInfo {
        title: "Score",
        command: "tab-scores",
        help: "Scores",
        keys: &["2"],
    };

    const KEYS: &'static [(Command, &'static [&'static str])] = &[(Command::ScoreView, &["v"])];

    fn draw(&self, f: &mut Frame, area: Rect, app: &App) {
        draw(self, f, area, app)
    }

    fn attempts(app: &App) -> Option<Vec<u64>> {
        moment_attempts(app)
    }

    fn refresh(app: &mut App) {
        let Some(t) = app
            .moment_attempt()
            .and_then(|a| a.scores.map(|t| (a.id, t, a.names)))
        else {
            app.tabs.scores.order.clear();
            app.tabs.scores.key = None;
            return;
        };
        // Totals are filled at SelectHost: the step shown is part of the key.
        let key = (t.0, app.moment().map_or(0, |s| s.seq));
        if app.tabs.scores.key == Some(key) {
            return;
        }
        // Ranked once SelectHost summed them; before, in feasible order.
        let ranked = app
            .moment()
            .and_then(|s| step_shown::ScoresThen::at(s, t.1))
            .is_none_or(|then| then.totals());
        let order = if ranked {
            score_order(t.1)
        } else {
            (0..t.1.nodes.len()).collect()
        };
        let cols = t.1.plugins.len() + t.1.extenders.len();
        let names = t.2;
        let new_names = (app.tabs.scores.names.as_ref().map(|n| n.0) != Some(t.0))
            .then(|| Elider::of(t.1.nodes.iter().map(|&n| names.get(n))));
        app.tabs.scores.order = order;
        if let Some(names) = new_names {
            app.tabs.scores.names = Some((key.0, names));
        }
        app.tabs.scores.key = Some(key);
        clamp(&mut app.tabs.scores.row, app.tabs.scores.order.len());
        clamp(&mut app.tabs.scores.col, cols);
    }

    fn command(app: &mut App, c: Command) -> bool {
        match c {
            Command::ColumnLeft | Command::ColumnRight => {
                let d: isize = if c == Command::ColumnLeft { -1 } else { 1 };
                let n = app
                    .moment_attempt()
                    .and_then(|a| a.scores)
                    .map_or(0, |t| t.plugins.len() + t.extenders.len());
                app.tabs.scores.col = step(app.tabs.scores.col, d, n);
            }
            // `*`: the row of the node the attempt shown chose.
            Command::JumpNode => {
                let Some(node) = chosen_node(app) else {
                    return true;
                };
                let score_row = app.moment_attempt().and_then(|a| {
                    let names = a.names;
                    a.scores?.nodes.iter().position(|&n| names.get(n) == node)
                });
                match score_row.and_then(|r| app.tabs.scores.order.iter().position(|&i| i == r)) {
                    Some(i) => app.tabs.scores.row = i,
                    None => app.error(format!("{node} has no scores in this attempt")),
                }
                app.focus = Pane::Main;
            }
            _ => return false,
        }
        true
    }

    fn move_selection(app: &mut App, d: isize) {
        app.tabs.scores.row = step(app.tabs.scores.row, d, app.tabs.scores.order.len());
    }

    /// Enter: the selected node in the Detail tab.
    fn select(app: &mut App) {
        let node = app.moment_attempt().and_then(|a| {
            let t = a.scores?;
            let r = *app.tabs.scores.order.get(app.tabs.scores.row)?;
            Some(a.names.get(*t.nodes.get(r)?).to_string())
        });
        super::detail::DetailTab::show_node(app, node);
    }

    /// `b`: the selected column's plugin.
    fn breakpoint(app: &App) -> Option<Breakpoint> {
        app.moment_attempt()
            .and_then(|a| a.scores)
            .and_then(|t| t.plugins.get(app.tabs.scores.col))
            .map(|p| Breakpoint::Plugin(p.name.to_string()))
    }

    fn click(app: &mut App, main: Rect, y: u16) {
        let below = geometry(app, crate::components::inner(main)).map_or(1, |g| g.footer_rows());
        if let Some(i) = layout::row_at(main, 1, below, y, app.tabs.scores.row) {
            app.tabs.scores.row = i.min(app.tabs.scores.order.len().saturating_sub(1));
        }
    }

    /// `v`, from any tab.
    fn own_command(app: &mut App, c: Command) -> bool {
        if c != Command::ScoreView {
            return false;
        }
        Self::next_mode(app);
        true
    }
}

impl ScoresTab {
    /// `v`: raw, normalized or weighted scores.
    pub fn next_mode(app: &mut App) {
        app.tabs.scores.mode = app.tabs.scores.mode.next();
        app.info(format!("scores: {}", app.tabs.scores.mode.label()));
    }
}

fn draw(tab: &ScoresTab, f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let msg = |f: &mut Frame, m: &str| crate::components::note(f, area, app, m);
    let Some(step) = app.moment() else {
        return msg(f, "no attempt yet");
    };
    let Some(a) = app.moment_attempt() else {
        return msg(f, "this step belongs to no attempt");
    };
    let Some(table) = a.scores else {
        return msg(
            f,
            "no scores for this attempt (no feasible node, or one feasible node: upstream skips scoring)",
        );
    };
    let Some(then) = step_shown::ScoresThen::at(step, table) else {
        return msg(
            f,
            &format!(
                "{}: Score has not run yet at this moment ({})",
                a.pod,
                step.point.as_str()
            ),
        );
    };
    let focused = app.focus == Pane::Main;
    let help = app.keymap.key(Command::Help);
    let g = Geometry::new(tab, &a, table, then, area, &help);
    let (name_w, cols_w) = (g.name_w, &g.columns);
    let names = &g.names;
    let shown = cols_w.shown.clone();
    let best = table.totals.iter().copied().max().unwrap_or(0);
    let chosen = table.chosen;

    let mut lines: Vec<Line> = Vec::new();
    let title = format!("Node ({}) {}", table.nodes.len(), tab.mode.label());
    let mut head = vec![span(cols_w.name_head(&title, name_w + 1), t.title)];
    for &c in &shown {
        let style = if c == tab.col { t.selection } else { t.title };
        let w = cols_w.width(&names[c]);
        let h = fit(&cols_w.header(&names[c]), w - 1);
        head.push(span(format!("{h:>w$}"), style));
    }
    head.push(span(format!("{:>8} {:>5}", "total", "rank"), t.title));
    if cols_w.right > 0 {
        head.push(span(format!(" +{}→", cols_w.right), t.muted));
    }
    lines.push(Line::from(head));
    let fresh;
    let node_names = match &tab.names {
        Some((id, names)) if *id == a.id => names,
        _ => {
            fresh = Elider::of(table.nodes.iter().map(|&n| a.names.get(n)));
            &fresh
        }
    };
    let visible = g.visible;
    let offset = layout::offset(tab.row, visible);
    for (i, &r) in tab.order.iter().enumerate().skip(offset).take(visible) {
        let cols = table.breakdown(r);
        let total = table.totals.get(r).copied().unwrap_or(0);
        let mark = if !then.totals() {
            " "
        } else if chosen == Some(r) {
            "★"
        } else if total == best {
            "="
        } else {
            " "
        };
        let sel = i == tab.row && focused;
        let mut spans: Vec<Span> = vec![span(
            format!(
                "{mark}{} ",
                node_names.pad(
                    table.nodes.get(r).map_or("?", |&n| a.names.get(n)),
                    name_w - 1
                )
            ),
            if sel {
                t.selection
            } else if chosen == Some(r) && then.totals() {
                t.chosen
            } else {
                t.base
            },
        )];
        for &c in &shown {
            let Some(col) = cols.get(c) else { continue };
            let w = cols_w.width(&names[c]);
            // Not computed yet at the step shown: as the Filter tab, `·`.
            let ready = match tab.mode {
                ScoreMode::Raw => then.raw(table, c),
                ScoreMode::Normalized => then.normalized(table, c),
                ScoreMode::Weighted => then.weighted(table, c),
            };
            if !ready {
                spans.push(span(format!("{:>w$}", "·"), t.muted));
                continue;
            }
            let v = match tab.mode {
                ScoreMode::Raw => col.raw,
                ScoreMode::Normalized => col.normalized,
                ScoreMode::Weighted => col.weighted,
            };
            let style = if !then.normalized(table, c) {
                t.base
            } else if col.normalized >= 80 {
                t.score_high
            } else if col.normalized <= 20 {
                t.score_low
            } else {
                t.base
            };
            spans.push(span(format!("{v:>w$}"), style));
        }
        if then.totals() {
            spans.push(span(
                format!("{total:>8} {:>5}", i + 1),
                if total == best { t.chosen } else { t.base },
            ));
        } else {
            spans.push(span(format!("{:>8} {:>5}", "·", "·"), t.muted));
        }
        lines.push(Line::from(spans));
    }
    while lines.len() < visible + 1 {
        lines.push(Line::default());
    }
    lines.extend(
        g.legend
            .iter()
            .map(|l| Line::from(span(l.clone(), t.muted))),
    );
    lines.extend(
        g.footer
            .iter()
            .map(|l| Line::from(span(l.clone(), t.title))),
    );
    f.render_widget(Paragraph::new(lines), area);
}

/// Where the score table's parts go: the name column, the plugin columns (full names or
/// abbreviations with a legend), and the lines under the rows, for drawing and clicks.
pub struct Geometry {
    pub name_w: usize,
    pub names: Vec<String>,
    pub columns: Columns,
    pub legend: Vec<String>,
    pub footer: Vec<String>,
    pub visible: usize,
}

impl Geometry {
    fn new(
        tab: &ScoresTab,
        a: &step_shown::AttemptData,
        table: &ScoreTable,
        then: step_shown::ScoresThen,
        area: Rect,
        help: &str,
    ) -> Geometry {
        let width = area.width as usize;
        let names: Vec<String> = table
            .plugins
            .iter()
            .map(|p| p.name.to_string())
            .chain(table.extenders.iter().map(|x| x.name.clone()))
            .collect();
        let longest = table
            .nodes
            .iter()
            .map(|&n| a.names.get(n).chars().count() + 1)
            .max()
            .unwrap_or(0);
        let mut name_w = longest.max(12).min((width / 3).clamp(12, 40));
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let columns = Columns::new(&refs, tab.col, width.saturating_sub(name_w + 15), COL);
        // Room the columns leave goes to names that are cut.
        let spare = width.saturating_sub(name_w + 15 + columns.used(&refs));
        name_w += spare.min(longest.saturating_sub(name_w));
        // The legend whole, unless it would take more than a third of the pane.
        let legend = columns.legend(&refs, width, area.height as usize / 3, help);
        let footer = wrap_hanging(&summary(tab, a, table, then, &names), width, 2);
        let visible = (area.height as usize).saturating_sub(1 + legend.len() + footer.len());
        Geometry {
            name_w,
            names,
            columns,
            legend,
            footer,
            visible,
        }
    }

    /// Lines under the rows.
    fn footer_rows(&self) -> u16 {
        (self.legend.len() + self.footer.len()).min(u16::MAX as usize) as u16
    }
}

/// The chosen node, ties, and the selected column's weight.
fn summary(
    tab: &ScoresTab,
    a: &step_shown::AttemptData,
    table: &ScoreTable,
    then: step_shown::ScoresThen,
    names: &[String],
) -> String {
    let best = table.totals.iter().copied().max().unwrap_or(0);
    let tied = table.totals.iter().filter(|x| **x == best).count();
    let sel_col = names.get(tab.col).map_or("", String::as_str);
    let weight = table.plugins.get(tab.col).map(|p| p.weight).or_else(|| {
        table
            .extenders
            .get(tab.col.wrapping_sub(table.plugins.len()))
            .map(|x| x.weight)
    });
    let weight_text = weight.map(|w| w.to_string()).unwrap_or_else(|| "-".into());
    if !then.totals() {
        return format!(
            "scoring in progress at this step: totals, rank and the node chosen come at SelectHost · column {sel_col} weight {weight_text}"
        );
    }
    let selected = table
        .chosen
        .and_then(|c| table.nodes.get(c))
        .map(|&n| a.names.get(n))
        .unwrap_or("-");
    format!(
        "★ {selected} (best {best}{}) · column {sel_col} weight {}",
        if tied > 1 {
            format!(", {tied} tied: upstream picks one at random")
        } else {
            String::new()
        },
        weight.map(|w| w.to_string()).unwrap_or_else(|| "-".into())
    )
}

/// The table's geometry in `inner`, when a score table is shown.
fn geometry(app: &App, inner: Rect) -> Option<Geometry> {
    let a = app.moment_attempt()?;
    let table = a.scores?;
    let then = step_shown::ScoresThen::at(app.moment()?, table)?;
    let help = app.keymap.key(Command::Help);
    Some(Geometry::new(&app.tabs.scores, &a, table, then, inner, &help))
}

/// Feasible-node rows by rank (highest total first; ties keep feasible order).
pub fn score_order(t: &ScoreTable) -> Vec<usize> {
    let mut rows: Vec<usize> = (0..t.nodes.len()).collect();
    rows.sort_by(|&a, &b| {
        let ta = t.totals.get(a).copied().unwrap_or(0);
        let tb = t.totals.get(b).copied().unwrap_or(0);
        tb.cmp(&ta)
    });
    rows
}
