//! Filter matrix: nodes × Filter plugins, ✓ pass, ✗ reject, – skipped (PreFilter said
//! Skip), ! error, · not run yet at this moment; `✗*` marks upstream's first failure on
//! a node (the real scheduler stops there). Nodes upstream's search never reached (it
//! stops once it has enough feasible nodes) are dimmed, their verdicts in parentheses.
//! The selected cell's reason and the exact kube-scheduler message are shown below.
//! Only visible rows are built.
//!
//! The Filter tab: its rows (filtered and sorted), the selected cell, and its keys
//! (columns, `/` filter, `o` sort, Enter opens the node, `*` the chosen node).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::tabs::{TabInfo, TabPane, moment_attempts};
use super::{fit, pad, span, wrap};
use crate::action::{Command, Pane, Tab};
use crate::app::{App, PromptKind, clamp, step};
use crate::framework::cycle::FilterCell;
use crate::layout;
use crate::moment;
use crate::rows::{self, MatrixSort, first_failure};
use crate::session::Breakpoint;

/// Column width of one plugin.
const COL: usize = 4;

/// `NodeResourcesFit` → `NRF`: capitals of the name (short, still recognisable).
pub fn abbrev(name: &str) -> String {
    let caps: String = name.chars().filter(|c| c.is_ascii_uppercase()).collect();
    if caps.len() >= 2 {
        caps
    } else {
        name.chars().take(3).collect()
    }
}

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
}

impl TabPane for FilterTab {
    const INFO: TabInfo = TabInfo {
        title: "Filter",
        command: "tab-filter",
        help: "Filter matrix",
        keys: &["1"],
    };

    fn of(app: &App) -> &Self {
        &app.matrix
    }

    fn draw(&self, f: &mut Frame, area: Rect, app: &App) {
        draw(self, f, area, app)
    }

    fn attempts(app: &App) -> Option<Vec<u64>> {
        moment_attempts(app)
    }

    /// Rebuilds the row order when the attempt, its columns at the step shown, the
    /// sort or the filter changed.
    fn refresh(app: &mut App) {
        let Some(step) = app.moment() else {
            app.matrix.order.clear();
            app.matrix.key = None;
            return;
        };
        let Some(a) = app.moment_attempt() else {
            app.matrix.order.clear();
            app.matrix.key = None;
            return;
        };
        let Some(m) = a.matrix else {
            app.matrix.order.clear();
            app.matrix.key = None;
            return;
        };
        let cols = moment::filter_columns(step, m).unwrap_or(0);
        // The selected column matters only to the by-plugin sort.
        let col = if app.matrix.sort == MatrixSort::ByPlugin {
            app.matrix.col
        } else {
            usize::MAX
        };
        let key = (
            a.id,
            m.nodes.len(),
            cols,
            app.matrix.sort,
            app.matrix.filter.clone(),
            col,
        );
        if app.matrix.key.as_ref() == Some(&key) {
            return;
        }
        let names = a.names;
        let order = rows::matrix_order(
            m,
            |i| names.get(i).to_string(),
            cols,
            app.matrix.sort,
            &app.matrix.filter,
            col,
        );
        let rejections = rows::rejections_per_plugin(m, cols);
        let plugins = m.plugins.len();
        app.matrix.order = order;
        app.matrix.rejections = rejections;
        app.matrix.key = Some(key);
        clamp(&mut app.matrix.row, app.matrix.order.len());
        clamp(&mut app.matrix.col, plugins);
    }

    fn command(app: &mut App, c: Command) -> bool {
        match c {
            Command::ColumnLeft | Command::ColumnRight => {
                let d: isize = if c == Command::ColumnLeft { -1 } else { 1 };
                let n = app
                    .moment_attempt()
                    .and_then(|a| a.matrix)
                    .map_or(0, |m| m.plugins.len());
                app.matrix.col = step(app.matrix.col, d, n);
                Self::refresh(app);
            }
            Command::Filter if app.focus == Pane::Main => app.prompt(PromptKind::MatrixFilter),
            Command::Sort if app.focus == Pane::Main => {
                app.matrix.sort = app.matrix.sort.next();
                Self::refresh(app);
                app.info(format!("nodes sorted: {}", app.matrix.sort.label()));
            }
            Command::Cancel if !app.matrix.filter.is_empty() => {
                Self::set_filter(app, String::new())
            }
            Command::JumpNode => Self::jump_to_chosen_node(app),
            _ => return false,
        }
        true
    }

    fn move_selection(app: &mut App, d: isize) {
        app.matrix.row = step(app.matrix.row, d, app.matrix.order.len());
    }

    /// Enter: the selected node in the Detail tab.
    fn select(app: &mut App) {
        let node = app.moment_attempt().and_then(|a| {
            let m = a.matrix?;
            let r = *app.matrix.order.get(app.matrix.row)?;
            Some(a.names.get(*m.nodes.get(r)?).to_string())
        });
        super::detail::DetailTab::show_node(app, node);
    }

    /// `b`: the selected column's plugin.
    fn breakpoint(app: &App) -> Option<Breakpoint> {
        app.moment_attempt()
            .and_then(|a| a.matrix)
            .and_then(|m| m.plugins.get(app.matrix.col))
            .map(|p| Breakpoint::Plugin(p.to_string()))
    }

    fn click(app: &mut App, main: Rect, y: u16) {
        if let Some(i) = layout::row_at(main, 2, 2, y, app.matrix.row) {
            app.matrix.row = i.min(app.matrix.order.len().saturating_sub(1));
        }
    }
}

impl FilterTab {
    /// The node filter, as typed at its prompt (applied as it is typed).
    pub fn set_filter(app: &mut App, text: String) {
        app.matrix.filter = text;
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
        if !app.matrix.order.contains(&r) && !app.matrix.filter.is_empty() {
            app.matrix.filter.clear();
            Self::refresh(app);
        }
        if let Some(i) = app.matrix.order.iter().position(|&i| i == r) {
            app.matrix.row = i;
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

fn draw(tab: &FilterTab, f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let msg = |f: &mut Frame, m: &str| super::note(f, area, app, m);
    let Some(step) = app.moment() else {
        let step = app.keymap.key(Command::Step);
        return msg(
            f,
            &format!("no attempt yet: press {step} to step the first pod"),
        );
    };
    let Some(a) = app.moment_attempt() else {
        return msg(f, "this step belongs to no attempt");
    };
    let Some(m) = a.matrix else {
        // Only say Filter did not run when the recomputed attempt says so.
        let why = if let Some(e) = app.full_error(a.id) {
            format!(
                "no Filter matrix: attempt {} could not be recomputed: {e}",
                a.id
            )
        } else if app.full_detail(a.id).is_none() {
            format!(
                "attempt {}'s Filter matrix is recomputed once the run pauses (it is not kept while running)",
                a.id
            )
        } else if let Some(d) = app.full_detail(a.id)
            && let (Some(hint), Some(batch)) = (&d.summary.hint, &d.summary.batch)
        {
            format!(
                "no Filter matrix for this attempt: OpportunisticBatching gave it a hint and Filter ran on {hint} alone, which passed ({batch})"
            )
        } else {
            "no Filter matrix for this attempt (Filter did not run over the nodes: PreFilter rejected the pod, the pod's nominated node passed alone, or the pod is waiting)".to_string()
        };
        return msg(f, &why);
    };
    let Some(cols) = moment::filter_columns(step, m) else {
        return msg(
            f,
            &format!(
                "{}: Filter has not run yet at this moment ({})",
                a.pod,
                step.point.as_str()
            ),
        );
    };
    let focused = app.focus == Pane::Main;
    let mut lines: Vec<Line> = Vec::new();
    let total = m.nodes.len();
    // Upstream's search stopped early: the rest are kubestep's, marked (✓) and counted apart.
    let examined = m.examined.filter(|&n| n < total);
    let shown_of = match (tab.order.len() == total, examined) {
        (true, None) => format!("{total}"),
        (false, None) => format!("{}/{total}", tab.order.len()),
        (true, Some(n)) => format!("{n} examined of {total}"),
        (false, Some(n)) => format!("{}/{total}, {n} examined", tab.order.len()),
    };
    // The examined order is the default: with the examined count it goes without saying.
    let title = match (examined, tab.sort) {
        (Some(_), MatrixSort::Examined) => format!("Node ({shown_of})"),
        _ => format!("Node ({shown_of}, {})", tab.sort.label()),
    };
    // The examined count may widen the name column (up to half the pane): it must show.
    let mut name_w = (area.width as usize / 3).clamp(12, 44);
    if examined.is_some() {
        name_w = name_w
            .max(title.chars().count())
            .min((area.width as usize / 2).max(12));
    }
    let vis_cols = (area.width as usize).saturating_sub(name_w + 1) / COL;
    let col_off = layout::offset(tab.col, vis_cols.max(1));
    let shown: Vec<usize> = (col_off..m.plugins.len()).take(vis_cols).collect();
    let mut head = vec![span(pad(&title, name_w + 1), t.title)];
    for &c in &shown {
        let style = if c == tab.col { t.selection } else { t.title };
        head.push(span(pad(&abbrev(m.plugins[c]), COL), style));
    }
    lines.push(Line::from(head));
    // How many nodes each plugin rejected (computed with the rows, not here).
    let mut counts = vec![span(pad("✗ per plugin", name_w + 1), t.muted)];
    for &c in &shown {
        let n = tab.rejections.get(c).copied().unwrap_or(0);
        let text = match n {
            0 => "·".to_string(),
            n if n < 1000 => n.to_string(),
            n if n < 10_000 => format!("{}k", n / 1000),
            _ => "9k+".to_string(),
        };
        let style = if n > 0 { t.verdict_fail } else { t.muted };
        counts.push(span(pad(&text, COL), style));
    }
    lines.push(Line::from(counts));

    // The selected cell, in words.
    let cell_line = tab
        .order
        .get(tab.row)
        .and_then(|&r| {
            let c = tab.col;
            let plugin = m.plugins.get(c)?;
            let node = a.names.get(*m.nodes.get(r)?);
            let what = if c >= cols {
                "not run yet at this moment".to_string()
            } else if !m.was_examined(r) {
                let verdict = match m.cell(r, c) {
                    FilterCell::Pass => "would pass".to_string(),
                    FilterCell::Skipped => "skipped".to_string(),
                    FilterCell::Reject { reasons, .. } => {
                        format!("would reject: {}", reasons.join(", "))
                    }
                    FilterCell::Error { message } => format!("would fail: {message}"),
                };
                format!(
                    "not examined: upstream's search stopped after {} nodes; kubestep's own run {verdict}",
                    m.examined.unwrap_or(0)
                )
            } else {
                match m.cell(r, c) {
                    FilterCell::Pass => "✓ passed".to_string(),
                    FilterCell::Skipped => "– skipped (PreFilter returned Skip)".to_string(),
                    FilterCell::Reject { code, reasons } => {
                        let first = if first_failure(m, r, cols) == Some(c) {
                            " (upstream's first failure)"
                        } else {
                            ""
                        };
                        let note = m.note(r, c).map(|n| format!(" — {n}")).unwrap_or_default();
                        format!("✗ {code:?}: {}{first}{note}", reasons.join(", "))
                    }
                    FilterCell::Error { message } => format!("! Error: {message}"),
                }
            };
            Some(format!("{node} · {plugin}: {what}"))
        })
        .unwrap_or_else(|| "no node matches the filter".into());
    // The cell's words (kubestep's note says which request failed and why) wrap rather
    // than lose their end, up to a third of the pane: the table stays the point.
    let width = area.width as usize;
    let mut cell_lines = if cell_line.chars().count() <= width {
        vec![cell_line]
    } else {
        wrap(&cell_line, width)
    };
    let cap = ((area.height as usize).saturating_sub(4) / 3).max(1);
    if cell_lines.len() > cap {
        cell_lines.truncate(cap);
        if let Some(last) = cell_lines.last_mut() {
            *last = fit(&format!("{last} …"), width);
        }
    }
    let summary = match (a.outcome, a.message) {
        (_, Some(msg)) => msg.to_string(),
        (Some(o), None) => format!(
            "{o}{}",
            a.node.map(|n| format!(" on {n}")).unwrap_or_default()
        ),
        (None, None) => format!("attempt in progress at {}", step.point.as_str()),
    };
    // The summary (upstream's message) wraps too: its lines are kept free of rows.
    let summary_h = wrap(&format!("Σ {summary}"), width).len().min(3);
    let visible = (area.height as usize).saturating_sub(2 + cell_lines.len() + summary_h);
    let offset = layout::offset(tab.row, visible);
    for (i, &r) in tab.order.iter().enumerate().skip(offset).take(visible) {
        let first = first_failure(m, r, cols);
        // Orders are rebuilt with the moment; a stale index is skipped, never indexed.
        let Some(&node) = m.nodes.get(r) else {
            continue;
        };
        let name = a.names.get(node);
        let sel_row = i == tab.row;
        let examined = m.was_examined(r);
        let mut spans: Vec<Span> = vec![span(
            format!("{} ", pad(name, name_w)),
            if sel_row && focused {
                t.selection
            } else if examined {
                t.base
            } else {
                t.muted
            },
        )];
        for &c in &shown {
            let (sym, mut style) = if c >= cols {
                ("·".to_string(), t.muted)
            } else if !examined {
                let sym = match m.cell(r, c) {
                    FilterCell::Pass => "(✓)",
                    FilterCell::Skipped => "(–)",
                    FilterCell::Reject { .. } => "(✗)",
                    FilterCell::Error { .. } => "(!)",
                };
                (sym.to_string(), t.muted)
            } else {
                match m.cell(r, c) {
                    FilterCell::Pass => ("✓".to_string(), t.verdict_pass),
                    FilterCell::Skipped => ("–".to_string(), t.verdict_skip),
                    FilterCell::Reject { .. } if first == Some(c) => {
                        ("✗*".to_string(), t.first_failure)
                    }
                    FilterCell::Reject { .. } => ("✗".to_string(), t.verdict_fail),
                    FilterCell::Error { .. } if first == Some(c) => {
                        ("!*".to_string(), t.first_failure)
                    }
                    FilterCell::Error { .. } => ("!".to_string(), t.verdict_error),
                }
            };
            if sel_row && c == tab.col && focused {
                style = style.patch(t.selection);
            }
            spans.push(span(pad(&sym, COL), style));
        }
        lines.push(Line::from(spans));
    }
    while lines.len() < visible + 2 {
        lines.push(Line::default());
    }

    lines.extend(cell_lines.into_iter().map(|l| Line::from(span(l, t.base))));
    lines.push(Line::from(vec![span("Σ ", t.key), span(summary, t.title)]));
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
}
