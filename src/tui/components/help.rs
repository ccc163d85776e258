//! Help (`?`): every key and what it does, generated from the keymap in force, grouped by
//! pane and laid out in as many columns as the terminal holds (k9s-like). What does not
//! fit scrolls, with the position on the border; `/` searches keys, names, descriptions
//! and the commands' synonyms (`approve` finds allow).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use super::panes::PAGE;
use super::{pad, pane, span, wrap};
use crate::action::Command;
use crate::app::{App, HelpState, Mode};
use crate::theme::Theme;

/// The narrowest a help column gets before fewer columns are used.
const MIN_COL: usize = 44;
const MAX_COLS: usize = 3;
/// The symbols the panes use, one per line.
const SYMBOLS: [(&str, &str); 11] = [
    ("✓", "pass"),
    ("✗", "reject"),
    ("✗*", "upstream's first failure on the node"),
    ("–", "skipped / not run"),
    ("!", "error"),
    ("⏸", "waits at Permit"),
    ("…", "not reached yet (or running)"),
    ("·", "not run yet"),
    ("★", "selected node"),
    ("=", "tied"),
    ("⏪", "a past step (time travel)"),
];

/// The popup's area on a screen of `size`: nearly all of it.
pub fn area(size: (u16, u16)) -> Rect {
    let full = Rect::new(0, 0, size.0, size.1);
    let w = size.0.saturating_sub(4).max(20);
    let h = size.1.saturating_sub(2).max(6);
    super::popups::centered(full, w, h)
}

/// One line of help: a group title, a key and its description (or the description's
/// continuation), or a blank separator.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Row {
    Title(String),
    Entry { keys: String, text: String },
    Blank,
}

/// The help laid out for an inner area `w` wide: the columns of rows.
struct View {
    columns: Vec<Vec<Row>>,
    col_w: usize,
    key_w: usize,
    /// Entries (keys, symbols, commands) that match the search.
    matches: usize,
}

impl View {
    fn rows(&self) -> usize {
        self.columns.iter().map(Vec::len).max().unwrap_or(0)
    }
}

fn matches(query: &str, hay: &[&str]) -> bool {
    if query.is_empty() {
        return true;
    }
    let q = query.to_lowercase();
    hay.iter().any(|h| h.to_lowercase().contains(&q))
}

/// The synonym of `cmd` the search matched, when the command's own words did not: help
/// shows it, so a hit on "approve" says why `allow` is listed.
fn synonym_hit(query: &str, cmd: Command) -> Option<&'static str> {
    let q = query.to_lowercase();
    cmd.synonyms()
        .iter()
        .find(|s| !q.is_empty() && s.contains(q.as_str()))
        .copied()
}

/// A description with the synonym that matched, if any.
fn described(text: &str, synonym: Option<&str>) -> String {
    match synonym {
        Some(s) => format!("{text} (also: {s})"),
        None => text.to_string(),
    }
}

/// The groups as blocks of rows (each block is kept in one column when it can be).
fn blocks(app: &App, query: &str, col_w: usize, key_w: usize) -> (Vec<Vec<Row>>, usize) {
    let text_w = col_w.saturating_sub(key_w + 1);
    let mut blocks = Vec::new();
    let mut found = 0;
    let entry = |keys: &str, text: &str, block: &mut Vec<Row>| {
        for (i, l) in wrap(text, text_w).into_iter().enumerate() {
            let keys = if i == 0 {
                keys.to_string()
            } else {
                String::new()
            };
            block.push(Row::Entry { keys, text: l });
        }
    };
    for (group, entries) in app.keymap.help_groups() {
        let mut block = vec![Row::Title(group.to_string())];
        for (keys, cmd) in entries {
            let own = matches(query, &[&keys, cmd.name(), cmd.describe(), group]);
            let synonym = (!own).then(|| synonym_hit(query, cmd)).flatten();
            if !own && synonym.is_none() {
                continue;
            }
            found += 1;
            entry(&keys, &described(cmd.describe(), synonym), &mut block);
        }
        if block.len() > 1 {
            blocks.push(block);
        }
    }
    let mut block = vec![Row::Title("Symbols".into())];
    for (sym, what) in SYMBOLS {
        if matches(query, &[sym, what, "symbols"]) {
            found += 1;
            entry(sym, what, &mut block);
        }
    }
    if block.len() > 1 {
        blocks.push(block);
    }
    // The Filter and Score tabs' column headers, spelled out for the profiles in force
    // (one wrapped entry: a legend, not a key per line).
    let legend: Vec<String> = column_plugins(app)
        .into_iter()
        .map(|name| format!("{} {name}", super::tabs::filter::draw::abbrev(name)))
        .filter(|l| matches(query, &[l, "plugin columns", "abbreviations", "legend"]))
        .collect();
    if !legend.is_empty() {
        found += legend.len();
        let mut block = vec![Row::Title("Plugin columns (Filter, Score)".into())];
        entry("", &legend.join(" · "), &mut block);
        blocks.push(block);
    }
    let mut block = vec![Row::Title(format!(
        "Command line ({})",
        app.keymap.label(Command::CommandLine)
    ))];
    let commands = crate::session::script::HELP
        .trim_start_matches("commands: ")
        .split(", ")
        .filter(|c| !c.is_empty());
    for c in commands {
        let (name, args) = c.split_once(' ').unwrap_or((c, ""));
        let own = matches(query, &[c, "command line"]);
        // A script command named as a key command shares its synonyms.
        let synonym = (!own)
            .then(|| Command::from_name(name).and_then(|cmd| synonym_hit(query, cmd)))
            .flatten();
        if own || synonym.is_some() {
            found += 1;
            // The command's name in the key column, its arguments wrapped at the `|`s.
            entry(
                name,
                &described(&args.replace('|', " | "), synonym),
                &mut block,
            );
        }
    }
    if block.len() > 1 {
        blocks.push(block);
    }
    (blocks, found)
}

/// Every Filter and Score plugin of the session's profiles, once, in profile order.
fn column_plugins(app: &App) -> Vec<&'static str> {
    use crate::framework::ExtensionPoint;
    let mut out: Vec<&'static str> = Vec::new();
    for fwk in app.session.frameworks() {
        for ep in [ExtensionPoint::Filter, ExtensionPoint::Score] {
            for e in fwk.plugins(ep) {
                if !out.contains(&e.name) {
                    out.push(e.name);
                }
            }
        }
    }
    out
}

fn view(app: &App, help: &HelpState, w: usize, h: usize) -> View {
    let labels = app.keymap.help();
    let commands = crate::session::script::HELP
        .trim_start_matches("commands: ")
        .split(", ")
        .map(|c| c.split(' ').next().unwrap_or(c).chars().count());
    let key_w = labels
        .iter()
        .map(|(k, _)| k.chars().count())
        .chain(commands)
        .max()
        .unwrap_or(4)
        .clamp(4, 14);
    // Columns of at least MIN_COL characters, a space between them.
    let n = ((w + 1) / (MIN_COL + 1)).clamp(1, MAX_COLS);
    let col_w = (w + 1) / n - 1;
    let (blocks, matches) = blocks(app, &help.query, col_w, key_w);
    let total: usize = blocks.iter().map(|b| b.len() + 1).sum();
    // Fill column by column, a block kept whole: the shortest columns that hold every
    // block in `n` columns (what does not fit the screen then scrolls).
    let pack = |target: usize| {
        let mut columns: Vec<Vec<Row>> = Vec::new();
        let mut cur: Vec<Row> = Vec::new();
        for b in &blocks {
            if !cur.is_empty() && cur.len() + 1 + b.len() > target {
                columns.push(std::mem::take(&mut cur));
            }
            if !cur.is_empty() {
                cur.push(Row::Blank);
            }
            cur.extend(b.iter().cloned());
        }
        columns.push(cur);
        columns
    };
    let mut target = total.div_ceil(n).max(1);
    let mut columns = pack(target);
    while columns.len() > n && target < total {
        target += 1;
        columns = pack(target);
    }
    let _ = h;
    View {
        columns,
        col_w,
        key_w,
        matches,
    }
}

/// The inner size of the help popup (less its bottom line, the search line).
fn inner(size: (u16, u16)) -> (usize, usize) {
    let a = area(size);
    (
        a.width.saturating_sub(2) as usize,
        a.height.saturating_sub(3) as usize,
    )
}

/// How far help can scroll on the app's screen: the update clamps to it.
/// A command while help is open: it scrolls, `/` searches, Esc drops the search and
/// anything else closes help.
pub fn command(app: &mut App, c: Command) {
    let Mode::Help(h) = &app.mode else {
        return;
    };
    let max = max_scroll(app, h);
    let Mode::Help(h) = &mut app.mode else {
        return;
    };
    match c {
        _ if h.typing => {
            // Esc while typing: the search is dropped.
            h.typing = false;
            h.query.clear();
        }
        Command::Up => h.scroll = h.scroll.saturating_sub(1),
        Command::Down => h.scroll = (h.scroll + 1).min(max),
        Command::PageUp => h.scroll = h.scroll.saturating_sub(PAGE),
        Command::PageDown => h.scroll = (h.scroll + PAGE).min(max),
        Command::Top => h.scroll = 0,
        Command::Bottom => h.scroll = max,
        Command::Filter => h.typing = true,
        Command::Cancel if !h.query.is_empty() => {
            h.query.clear();
            h.scroll = 0;
        }
        _ => app.mode = Mode::Normal,
    }
}

pub fn max_scroll(app: &App, help: &HelpState) -> usize {
    let (w, h) = inner(app.size);
    view(app, help, w, h).rows().saturating_sub(h)
}

/// Every line help would show on an endless screen `w` wide, as text (for tests).
pub fn text(app: &App, help: &HelpState, w: usize) -> Vec<String> {
    let v = view(app, help, w, usize::MAX / 2);
    v.columns
        .iter()
        .flatten()
        .map(|r| match r {
            Row::Title(t) => t.clone(),
            Row::Entry { keys, text } => format!("{} {text}", pad(keys, v.key_w)),
            Row::Blank => String::new(),
        })
        .collect()
}

fn row_spans<'a>(t: &Theme, r: Option<&Row>, v: &View, query: &str) -> Vec<Span<'a>> {
    let w = v.col_w;
    match r {
        None | Some(Row::Blank) => vec![span(" ".repeat(w), t.base)],
        Some(Row::Title(s)) => vec![span(pad(s, w), t.title)],
        Some(Row::Entry { keys, text }) => {
            let hit = !query.is_empty() && text.to_lowercase().contains(&query.to_lowercase());
            let style: Style = if hit { t.selection } else { t.base };
            vec![
                span(pad(keys, v.key_w), t.key),
                span(" ", t.base),
                span(pad(text, w.saturating_sub(v.key_w + 1)), style),
            ]
        }
    }
}

pub fn draw(f: &mut Frame, app: &App, help: &HelpState) {
    let t = &app.theme;
    let size = (f.area().width, f.area().height);
    let area = area(size);
    let (w, h) = inner(size);
    let v = view(app, help, w, h);
    let rows = v.rows();
    let scroll = help.scroll.min(rows.saturating_sub(h));
    let mut lines: Vec<Line> = Vec::with_capacity(h + 1);
    for y in scroll..(scroll + h).min(rows) {
        let mut spans = Vec::new();
        for (i, col) in v.columns.iter().enumerate() {
            if i > 0 {
                spans.push(span(" ", t.base));
            }
            spans.extend(row_spans(t, col.get(y), &v, &help.query));
        }
        lines.push(Line::from(spans));
    }
    if rows == 0 {
        lines.push(Line::from(span(
            format!("no key, symbol or command matches {:?}", help.query),
            t.muted,
        )));
    }
    while lines.len() < h {
        lines.push(Line::default());
    }
    // The bottom line: the search being typed, or how to search and close.
    let search = app.keymap.label(Command::Filter);
    // Enter and Esc end a search whatever the keymap says (as in every prompt).
    let cancel = app.keymap.key(Command::Cancel);
    let bottom = if help.typing {
        Line::from(vec![
            span(format!("search {search} "), t.key),
            span(format!("{}▏", help.query), t.base),
            span(
                format!("  {} match(es) · Enter keeps · Esc clears", v.matches),
                t.muted,
            ),
        ])
    } else if !help.query.is_empty() {
        Line::from(vec![
            span(
                format!("search {:?}: {} match(es)", help.query, v.matches),
                t.key,
            ),
            span(format!(" · {search} edits · {cancel} clears"), t.muted),
        ])
    } else {
        let k = |c| app.keymap.key(c);
        Line::from(span(
            format!(
                "{search} search · {}/{} {}/{} scroll · {cancel} closes · keys: [keys] in $XDG_CONFIG_HOME/kubestep/config.toml",
                k(Command::Down),
                k(Command::Up),
                k(Command::PageUp),
                k(Command::PageDown)
            ),
            t.muted,
        ))
    };
    lines.push(bottom);
    // Where the view is: "lines 1–20 of 64 ↓" when help scrolls.
    let position = if rows > h {
        let more = match (scroll > 0, scroll + h < rows) {
            (true, true) => " ↑↓",
            (false, true) => " ↓ more",
            (true, false) => " ↑",
            (false, false) => "",
        };
        format!(
            " lines {}–{} of {rows}{more} ",
            scroll + 1,
            (scroll + h).min(rows)
        )
    } else {
        String::new()
    };
    let block = pane(app, " Help ", true).title_bottom(Line::from(position).right_aligned());
    f.render_widget(Clear, area);
    f.render_widget(Paragraph::new(lines).block(block), area);
}
