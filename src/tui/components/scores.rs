//! Scores: feasible nodes × Score plugins (and extenders), raw, normalized or weighted
//! (`v` toggles), with the total and rank; `★` the node selected, `=` nodes tied with it.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::matrix::abbrev;
use super::{fit, pad, span};
use crate::action::Pane;
use crate::app::{App, ScoreMode};
use crate::layout;
use crate::moment;

const COL: usize = 6;

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let msg = |f: &mut Frame, m: &str| super::note(f, area, app, m);
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
    if !moment::scores_ready(step) {
        return msg(
            f,
            &format!(
                "{}: Score has not run yet at this moment ({})",
                a.pod,
                step.point.as_str()
            ),
        );
    }
    let focused = app.focus == Pane::Main;
    let ncols = table.plugins.len() + table.extenders.len();
    let name_w = (area.width as usize / 3).clamp(12, 40);
    let vis_cols = (area.width as usize).saturating_sub(name_w + 16) / COL;
    let col_off = layout::offset(app.scores.col, vis_cols.max(1));
    let shown: Vec<usize> = (col_off..ncols).take(vis_cols).collect();
    let names: Vec<&str> = table
        .plugins
        .iter()
        .map(|p| p.name)
        .chain(table.extenders.iter().map(|x| x.name.as_str()))
        .collect();
    let best = table.totals.iter().copied().max().unwrap_or(0);
    let chosen = table.chosen;

    let mut lines: Vec<Line> = Vec::new();
    let mut head = vec![span(
        pad(
            &format!("Node ({}) {}", table.nodes.len(), app.scores.mode.label()),
            name_w + 1,
        ),
        t.title,
    )];
    for &c in &shown {
        let style = if c == app.scores.col {
            t.selection
        } else {
            t.title
        };
        head.push(span(
            format!("{:>w$}", fit(&abbrev(names[c]), COL - 1), w = COL),
            style,
        ));
    }
    head.push(span(format!("{:>8} {:>5}", "total", "rank"), t.title));
    lines.push(Line::from(head));

    let visible = (area.height as usize).saturating_sub(2);
    let offset = layout::offset(app.scores.row, visible);
    for (i, &r) in app
        .scores
        .order
        .iter()
        .enumerate()
        .skip(offset)
        .take(visible)
    {
        let cols = table.breakdown(r);
        let total = table.totals.get(r).copied().unwrap_or(0);
        let mark = if chosen == Some(r) {
            "★"
        } else if total == best {
            "="
        } else {
            " "
        };
        let sel = i == app.scores.row && focused;
        let mut spans: Vec<Span> = vec![span(
            format!(
                "{mark}{} ",
                pad(
                    table.nodes.get(r).map_or("?", |&n| a.names.get(n)),
                    name_w - 1
                )
            ),
            if sel {
                t.selection
            } else if chosen == Some(r) {
                t.chosen
            } else {
                t.base
            },
        )];
        for &c in &shown {
            let Some(col) = cols.get(c) else { continue };
            let v = match app.scores.mode {
                ScoreMode::Raw => col.raw,
                ScoreMode::Normalized => col.normalized,
                ScoreMode::Weighted => col.weighted,
            };
            let style = if col.normalized >= 80 {
                t.score_high
            } else if col.normalized <= 20 {
                t.score_low
            } else {
                t.base
            };
            spans.push(span(format!("{v:>COL$}"), style));
        }
        spans.push(span(
            format!("{total:>8} {:>5}", i + 1),
            if total == best { t.chosen } else { t.base },
        ));
        lines.push(Line::from(spans));
    }
    while lines.len() < visible + 1 {
        lines.push(Line::default());
    }
    let tied = table.totals.iter().filter(|x| **x == best).count();
    let sel_col = names.get(app.scores.col).copied().unwrap_or("");
    let weight = table
        .plugins
        .get(app.scores.col)
        .map(|p| p.weight)
        .or_else(|| {
            table
                .extenders
                .get(app.scores.col.wrapping_sub(table.plugins.len()))
                .map(|x| x.weight)
        });
    let selected = chosen
        .and_then(|c| table.nodes.get(c))
        .map(|&n| a.names.get(n))
        .unwrap_or("-");
    let footer = format!(
        "★ {selected} (best {best}{}) · column {sel_col} weight {}",
        if tied > 1 {
            format!(", {tied} tied: upstream picks one at random")
        } else {
            String::new()
        },
        weight.map(|w| w.to_string()).unwrap_or_else(|| "-".into())
    );
    lines.push(Line::from(span(fit(&footer, area.width as usize), t.title)));
    f.render_widget(Paragraph::new(lines), area);
}
