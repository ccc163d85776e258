//! How the Filter matrix is laid out and drawn (the tab's state and keys are in
//! `mod.rs`, its row order in `order.rs`): plugin columns under full names when they fit, else abbreviated with a
//! legend and `←N` / `+N→` marks for the columns cut; node names given the room the
//! columns leave, and shortened so no two read alike (`Elider`); the selected cell in
//! words and upstream's message below. One geometry serves drawing and mouse hits.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::order::{MatrixSort, first_failure};
use crate::action::Pane;
use crate::app::App;
use crate::components::tabs::filter::FilterTab;
use crate::components::{Elider, fit, pad, span, wrap, wrap_hanging};
use crate::framework::cycle::{FilterCell, FilterMatrix};
use crate::layout;
use crate::session::{Point, StepRecord};
use crate::step_shown;

/// Column width of one plugin under its abbreviation.
const COL: usize = 4;

/// The plugin columns a matrix `room` characters wide shows: every one under its full
/// name when all fit that way, else abbreviated (`NRF`), as many as fit around the
/// selected one, counting the columns cut on either side for the `←N` / `+N→` marks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Columns {
    pub full: bool,
    /// An abbreviated column's width.
    pub col: usize,
    pub shown: Vec<usize>,
    pub left: usize,
    pub right: usize,
}

impl Columns {
    pub fn new(plugins: &[&str], selected: usize, room: usize, col: usize) -> Columns {
        let full_w: usize = plugins
            .iter()
            .map(|p| p.chars().count().max(col - 1) + 1)
            .sum();
        if full_w <= room {
            return Columns {
                full: true,
                col,
                shown: (0..plugins.len()).collect(),
                left: 0,
                right: 0,
            };
        }
        let all = room / col;
        // Room for the `+N→` mark when some columns are cut.
        let vis = if all >= plugins.len() {
            plugins.len()
        } else {
            room.saturating_sub(4) / col
        };
        let off = layout::offset(selected, vis.max(1));
        let shown: Vec<usize> = (off..plugins.len()).take(vis).collect();
        let left = off.min(plugins.len());
        Columns {
            full: false,
            col,
            right: plugins.len() - left - shown.len(),
            left,
            shown,
        }
    }

    /// The name column's header `w` wide: `title`, ending in `←N` when columns are
    /// scrolled out on the left.
    pub fn name_head(&self, title: &str, w: usize) -> String {
        if self.left == 0 {
            return pad(title, w);
        }
        let mark = format!(" ←{} ", self.left);
        let room = w.saturating_sub(mark.chars().count());
        format!("{}{mark}", pad(title, room))
    }

    pub fn header(&self, plugin: &str) -> String {
        if self.full {
            plugin.to_string()
        } else {
            abbrev(plugin)
        }
    }

    pub fn width(&self, plugin: &str) -> usize {
        if self.full {
            plugin.chars().count().max(self.col - 1) + 1
        } else {
            self.col
        }
    }

    /// The columns' width with the `+N→` mark after them.
    pub fn used(&self, plugins: &[&str]) -> usize {
        let cols: usize = self.shown.iter().map(|&c| self.width(plugins[c])).sum();
        let mark = if self.right > 0 {
            format!(" +{}→", self.right).chars().count()
        } else {
            0
        };
        cols + mark
    }

    /// `NU NodeUnschedulable · NN NodeName · …` for the columns shown (nothing when the
    /// headers are the full names), each entry whole on a line of `width`, in as many
    /// lines as it takes up to `max`; beyond that the last line says help has them all
    /// (`help` is its key).
    pub fn legend(&self, plugins: &[&str], width: usize, max: usize, help: &str) -> Vec<String> {
        if self.full || self.shown.is_empty() {
            return Vec::new();
        }
        let entries: Vec<String> = self
            .shown
            .iter()
            .map(|&c| fit(&format!("{} {}", abbrev(plugins[c]), plugins[c]), width))
            .collect();
        let mut lines = join_wrapped(&entries, " · ", width);
        if lines.len() > max.max(1) {
            lines.truncate(max.max(1));
            if let Some(last) = lines.last_mut() {
                let more = format!(" … all in help ({help})");
                let keep = width.saturating_sub(more.chars().count());
                *last = format!("{}{more}", fit(last, keep));
            }
        }
        lines
    }
}

/// `items` joined by `sep` in lines of at most `width`, an item never split across two.
fn join_wrapped(items: &[String], sep: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for item in items {
        let n = cur.chars().count();
        if n > 0 && n + sep.chars().count() + item.chars().count() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push_str(sep);
        }
        cur.push_str(item);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// `NodeResourcesFit` → `NRF`: capitals of the name (short, still recognisable).
pub fn abbrev(name: &str) -> String {
    let caps: String = name.chars().filter(|c| c.is_ascii_uppercase()).collect();
    if caps.len() >= 2 {
        caps
    } else {
        name.chars().take(3).collect()
    }
}

pub fn draw(tab: &FilterTab, f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let msg = |f: &mut Frame, m: &str| crate::components::note(f, area, app, m);
    let Some(step) = app.moment() else {
        let step = app.keymap.key(crate::action::Command::Step);
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
    let Some(cols) = step_shown::filter_columns(step, m) else {
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
    let help = app.keymap.key(crate::action::Command::Help);
    let g = Geometry::new(tab, &a, m, cols, summary(app, &a, step), area, &help);
    let (name_w, cols_w, visible) = (g.name_w, &g.columns, g.visible);
    let mut lines: Vec<Line> = Vec::new();
    let shown = cols_w.shown.clone();
    let mut head = vec![span(cols_w.name_head(&g.title, name_w + 1), t.title)];
    for &c in &shown {
        let style = if c == tab.col { t.selection } else { t.title };
        let p = m.plugins[c];
        head.push(span(pad(&cols_w.header(p), cols_w.width(p)), style));
    }
    if cols_w.right > 0 {
        head.push(span(format!("+{}→", cols_w.right), t.muted));
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
        counts.push(span(pad(&text, cols_w.width(m.plugins[c])), style));
    }
    lines.push(Line::from(counts));
    let fresh;
    let names = match &tab.names {
        Some((id, names)) if *id == (a.id, m.nodes.len()) => names,
        _ => {
            fresh = Elider::of(m.nodes.iter().map(|&n| a.names.get(n)));
            &fresh
        }
    };
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
            format!("{} ", names.pad(name, name_w)),
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
            spans.push(span(pad(&sym, cols_w.width(m.plugins[c])), style));
        }
        lines.push(Line::from(spans));
    }
    while lines.len() < visible + 2 {
        lines.push(Line::default());
    }

    lines.extend(g.legend.into_iter().map(|l| Line::from(span(l, t.muted))));
    lines.extend(g.cell.into_iter().map(|l| Line::from(span(l, t.base))));
    lines.push(Line::from(vec![
        span("Σ ", t.key),
        span(g.summary, t.title),
    ]));
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
}

/// Where the matrix's parts go in an area: the name column's width, the plugin columns,
/// and the lines under the rows (legend, the selected cell in words, upstream's
/// message), so drawing and a click agree on which row is where.
pub struct Geometry {
    pub title: String,
    pub name_w: usize,
    pub columns: Columns,
    pub legend: Vec<String>,
    pub cell: Vec<String>,
    pub summary: String,
    /// Node rows that fit between the two header lines and the lines under them.
    pub visible: usize,
}

/// Rows above the node rows: plugin names and rejection counts.
pub const HEADER_ROWS: u16 = 2;

impl Geometry {
    pub fn new(
        tab: &FilterTab,
        a: &step_shown::AttemptData,
        m: &FilterMatrix,
        cols: usize,
        summary: String,
        area: Rect,
        help: &str,
    ) -> Geometry {
        let total = m.nodes.len();
        // Upstream's search stopped early: the rest are kubestep's, counted apart.
        let examined = m.examined.filter(|&n| n < total);
        let shown = tab.order.len();
        // Most telling first; a narrow pane gets a shorter form rather than a cut count.
        let counts: Vec<String> = match (shown == total, examined) {
            (true, None) => vec![format!("{total}")],
            (false, None) => vec![format!("{shown}/{total}")],
            (true, Some(n)) => vec![
                format!("{n} examined of {total}"),
                format!("{n}/{total} examined"),
                format!("{n}/{total} ex."),
            ],
            (false, Some(n)) => vec![
                format!("{shown}/{total}, {n} examined"),
                format!("{shown}/{total}, {n} ex."),
            ],
        };
        // The examined order is the default: with the examined count it goes without saying.
        let titles: Vec<String> = counts
            .iter()
            .flat_map(|c| match (examined, tab.sort) {
                (Some(_), MatrixSort::Examined) => vec![format!("Node ({c})"), c.clone()],
                // The sort is also on the status line: a narrow pane keeps the count.
                _ => vec![
                    format!("Node ({c}, {})", tab.sort.label()),
                    format!("Node ({c})"),
                ],
            })
            .collect();
        let width = area.width as usize;
        // Names as wide as the longest needs, up to a third of the pane; the examined
        // count may widen the column (up to half the pane): it must show.
        let longest = m
            .nodes
            .iter()
            .map(|&n| a.names.get(n).chars().count())
            .max()
            .unwrap_or(0);
        let mut name_w = longest.max(12).min((width / 3).clamp(12, 44));
        let room = if examined.is_some() {
            (width / 2).max(12)
        } else {
            name_w
        };
        let title = titles
            .iter()
            .find(|t| t.chars().count() <= room)
            .or(titles.last())
            .cloned()
            .unwrap_or_default();
        if examined.is_some() {
            name_w = name_w.max(title.chars().count()).min(room);
        }
        let columns = Columns::new(&m.plugins, tab.col, width.saturating_sub(name_w + 1), COL);
        // Room the columns leave goes to names that are cut.
        let spare = width.saturating_sub(name_w + 1 + columns.used(&m.plugins));
        name_w += spare.min(longest.saturating_sub(name_w));
        // The cell's words (kubestep's note says which request failed and why) wrap
        // rather than lose their end, up to a third of the pane: the table stays the point.
        let mut cell = wrap_hanging(&cell_text(tab, a, m, cols), width, 2);
        let cap = ((area.height as usize).saturating_sub(4) / 3).max(1);
        if cell.len() > cap {
            cell.truncate(cap);
            if let Some(last) = cell.last_mut() {
                *last = fit(&format!("{last} …"), width);
            }
        }
        // The summary (upstream's message) wraps too: its lines are kept free of rows.
        let summary_h = wrap(&format!("Σ {summary}"), width).len().min(3);
        // The legend whole, unless it would take more than a third of the pane.
        let legend = columns.legend(&m.plugins, width, area.height as usize / 3, help);
        let visible = (area.height as usize)
            .saturating_sub(HEADER_ROWS as usize + cell.len() + summary_h + legend.len());
        Geometry {
            title,
            name_w,
            columns,
            legend,
            cell,
            summary,
            visible,
        }
    }

    /// Lines under the node rows.
    pub fn footer_rows(&self, area: Rect) -> u16 {
        let used = HEADER_ROWS as usize + self.visible;
        (area.height as usize)
            .saturating_sub(used)
            .min(u16::MAX as usize) as u16
    }
}

/// The geometry of the matrix shown in `inner` (the main pane inside its border), when
/// there is one.
pub fn geometry(tab: &FilterTab, app: &App, inner: Rect) -> Option<Geometry> {
    let step = app.moment()?;
    let a = app.moment_attempt()?;
    let m = a.matrix?;
    let cols = step_shown::filter_columns(step, m)?;
    let help = app.keymap.key(crate::action::Command::Help);
    Some(Geometry::new(tab, &a, m, cols, summary(app, &a, step), inner, &help))
}

/// The Σ line: how the attempt ended (upstream's message), or, at a step before its end,
/// where it stood then and what Filter had found by then: never a later step's outcome.
fn summary(app: &App, a: &step_shown::AttemptData, step: &StepRecord) -> String {
    match (a.outcome, a.message) {
        (_, Some(msg)) => msg.to_string(),
        (Some(o), None) => format!(
            "{o}{}",
            a.node.map(|n| format!(" on {n}")).unwrap_or_default()
        ),
        (None, None) => {
            let at = match a.node {
                Some(n) => format!("{} (SelectHost chose {n})", step.point.as_str()),
                None => step.point.as_str().to_string(),
            };
            // The search's own step, last of Filter, says what it found.
            let found = step_shown::attempt_steps(&app.session, step)
                .into_iter()
                .rev()
                .find(|s| s.point == Point::Filter && s.plugin.is_none())
                .map(|s| format!("; Filter found {}", s.message()))
                .unwrap_or_default();
            format!("attempt in progress at {at}{found}")
        }
    }
}

/// The selected cell in words.
fn cell_text(
    tab: &FilterTab,
    a: &step_shown::AttemptData,
    m: &FilterMatrix,
    cols: usize,
) -> String {
    tab
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
        .unwrap_or_else(|| "no node matches the filter".into())
}
