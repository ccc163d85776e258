//! Help (`?`): every key and what it does, generated from the keymap in force.

use ratatui::Frame;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph};

use super::popups::centered;
use super::{pad, pane, span};
use crate::tui::app::App;

pub fn draw(f: &mut Frame, app: &App, scroll: usize) {
    let t = &app.theme;
    let area = centered(f.area(), 76, 30);
    let help = app.keymap.help();
    let key_w = help
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(4)
        .min(20);
    let mut lines = vec![Line::from(span(
        "Keys (config: $XDG_CONFIG_HOME/kubestep/config.toml [keys]) · Esc closes",
        t.muted,
    ))];
    for (keys, what) in &help {
        lines.push(Line::from(vec![
            span(pad(keys, key_w + 2), t.key),
            span(*what, t.base),
        ]));
    }
    lines.push(Line::default());
    lines.push(Line::from(span(
        "Symbols: ✓ pass  ✗ reject  ✗* upstream's first failure  – skipped / not run  ! error  ⏸ waits at Permit  … not reached yet (or running)  · not run yet  ★ selected  = tied  ⏪ a past step",
        t.muted,
    )));
    lines.push(Line::from(span(
        format!("Commands (:) — {}", crate::session::script::HELP),
        t.muted,
    )));
    let scroll = scroll.min(lines.len().saturating_sub(1));
    f.render_widget(Clear, area);
    f.render_widget(
        Paragraph::new(lines)
            .wrap(ratatui::widgets::Wrap { trim: false })
            .scroll((scroll as u16, 0))
            .block(pane(app, " Help ", true)),
        area,
    );
}
