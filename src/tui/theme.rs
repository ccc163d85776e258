//! Themes: TOML files with a named palette and semantic slots (verdicts, scores, queue
//! states, focus, selection, ...). The bundled ones are embedded; a file of the same name
//! in the user's theme directory overrides one. Every problem in a theme file becomes a
//! warning shown in the UI: the slot keeps its mono default, nothing is fatal.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ratatui::style::{Color, Modifier, Style};

/// Bundled themes, embedded so the binary needs no files.
pub const BUNDLED: [(&str, &str); 5] = [
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../themes/high-contrast.toml"),
    ),
    ("ansi16", include_str!("../../themes/ansi16.toml")),
    ("mono", include_str!("../../themes/mono.toml")),
];

/// Semantic style slots. Draw code asks for meaning (`verdict_fail`), never a colour.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Theme {
    pub name: String,
    pub base: Style,
    pub border: Style,
    pub focus: Style,
    pub title: Style,
    pub selection: Style,
    pub header: Style,
    pub muted: Style,
    pub key: Style,
    pub verdict_pass: Style,
    pub verdict_fail: Style,
    pub verdict_skip: Style,
    pub verdict_error: Style,
    pub first_failure: Style,
    pub score_high: Style,
    pub score_low: Style,
    pub chosen: Style,
    pub queue_active: Style,
    pub queue_backoff: Style,
    pub queue_unschedulable: Style,
    pub queue_gated: Style,
    pub queue_waiting: Style,
    pub queue_bound: Style,
    pub queue_in_flight: Style,
    pub changed: Style,
    pub what_if: Style,
    pub warning: Style,
    pub error: Style,
    pub running: Style,
    pub paused: Style,
}

impl Theme {
    fn slot_mut(&mut self, name: &str) -> Option<&mut Style> {
        Some(match name {
            "base" => &mut self.base,
            "border" => &mut self.border,
            "focus" => &mut self.focus,
            "title" => &mut self.title,
            "selection" => &mut self.selection,
            "header" => &mut self.header,
            "muted" => &mut self.muted,
            "key" => &mut self.key,
            "verdict_pass" => &mut self.verdict_pass,
            "verdict_fail" => &mut self.verdict_fail,
            "verdict_skip" => &mut self.verdict_skip,
            "verdict_error" => &mut self.verdict_error,
            "first_failure" => &mut self.first_failure,
            "score_high" => &mut self.score_high,
            "score_low" => &mut self.score_low,
            "chosen" => &mut self.chosen,
            "queue_active" => &mut self.queue_active,
            "queue_backoff" => &mut self.queue_backoff,
            "queue_unschedulable" => &mut self.queue_unschedulable,
            "queue_gated" => &mut self.queue_gated,
            "queue_waiting" => &mut self.queue_waiting,
            "queue_bound" => &mut self.queue_bound,
            "queue_in_flight" => &mut self.queue_in_flight,
            "changed" => &mut self.changed,
            "what_if" => &mut self.what_if,
            "warning" => &mut self.warning,
            "error" => &mut self.error,
            "running" => &mut self.running,
            "paused" => &mut self.paused,
            _ => return None,
        })
    }

    /// The mono theme: reverse video for selection, bold for emphasis, no colour.
    pub fn mono() -> Theme {
        let mut w = Vec::new();
        parse("mono", bundled("mono").unwrap_or_default(), &mut w)
    }
}

fn bundled(name: &str) -> Option<&'static str> {
    BUNDLED.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// What the environment says about colour.
#[derive(Debug, Clone, Copy, Default)]
pub struct ColorEnv {
    /// `NO_COLOR` is set (to anything non-empty).
    pub no_color: bool,
    /// `COLORTERM` is `truecolor` or `24bit`.
    pub truecolor: bool,
}

impl ColorEnv {
    pub fn from_env() -> ColorEnv {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let truecolor = std::env::var("COLORTERM")
            .map(|v| matches!(v.to_ascii_lowercase().as_str(), "truecolor" | "24bit"))
            .unwrap_or(false);
        ColorEnv {
            no_color,
            truecolor,
        }
    }
}

/// Picks and loads a theme. `explicit` is `--theme` (a name or a file), `configured` the
/// config file's `theme`. Without either: mono under NO_COLOR, dark on truecolour
/// terminals, the 16-colour theme elsewhere. An explicit `--theme` wins over NO_COLOR.
pub fn resolve(
    explicit: Option<&str>,
    configured: Option<&str>,
    env: ColorEnv,
    user_dir: Option<&Path>,
    warnings: &mut Vec<String>,
) -> Theme {
    let choice = match (explicit, configured) {
        (Some(e), _) => e.to_string(),
        (None, _) if env.no_color => "mono".to_string(),
        (None, Some(c)) => c.to_string(),
        (None, None) if env.truecolor => "dark".to_string(),
        (None, None) => "ansi16".to_string(),
    };
    match load(&choice, user_dir, warnings) {
        Some(t) => t,
        None => {
            let fallback = if env.no_color {
                "mono"
            } else if env.truecolor {
                "dark"
            } else {
                "ansi16"
            };
            warnings.push(format!("theme {choice:?}: using {fallback} instead"));
            load(fallback, None, warnings).unwrap_or_else(Theme::mono)
        }
    }
}

/// A theme file's text, read whole if it is at most `limits::WHOLE_FILE`.
fn read(path: &Path) -> std::io::Result<String> {
    use kubestep_engine::limits;
    limits::read_file_to_string(path, limits::WHOLE_FILE, "a theme file")
}

/// A theme by name (user directory first, then bundled) or by file path.
pub fn load(choice: &str, user_dir: Option<&Path>, warnings: &mut Vec<String>) -> Option<Theme> {
    let as_path = Path::new(choice);
    if choice.ends_with(".toml") || choice.contains('/') {
        return match read(as_path) {
            Ok(text) => Some(parse(&as_path.display().to_string(), &text, warnings)),
            Err(e) => {
                warnings.push(format!("theme file {}: {e}", as_path.display()));
                None
            }
        };
    }
    if let Some(dir) = user_dir {
        let p: PathBuf = dir.join(format!("{choice}.toml"));
        if let Ok(text) = read(&p) {
            return Some(parse(&p.display().to_string(), &text, warnings));
        }
    }
    match bundled(choice) {
        Some(text) => Some(parse(choice, text, warnings)),
        None => {
            let names: Vec<&str> = BUNDLED.iter().map(|(n, _)| *n).collect();
            warnings.push(format!(
                "unknown theme {choice:?} (bundled: {})",
                names.join(", ")
            ));
            None
        }
    }
}

/// Parses a theme file. Slots it does not set keep the mono defaults.
pub fn parse(source: &str, text: &str, warnings: &mut Vec<String>) -> Theme {
    let mut theme = Theme {
        name: source.to_string(),
        ..Default::default()
    };
    let doc: toml::Table = match text.parse() {
        Ok(d) => d,
        Err(e) => {
            warnings.push(format!("theme {source}: {}", one_line(&e.to_string())));
            return theme;
        }
    };
    if let Some(n) = doc.get("name").and_then(toml::Value::as_str) {
        theme.name = n.to_string();
    }
    let mut palette: BTreeMap<String, Color> = BTreeMap::new();
    if let Some(p) = doc.get("palette").and_then(toml::Value::as_table) {
        for (name, v) in p {
            match v.as_str().map(parse_color) {
                Some(Ok(c)) => {
                    palette.insert(name.clone(), c);
                }
                Some(Err(e)) => warnings.push(format!("theme {source}: palette.{name}: {e}")),
                None => warnings.push(format!("theme {source}: palette.{name}: not a string")),
            }
        }
    }
    let Some(slots) = doc.get("slots").and_then(toml::Value::as_table) else {
        return theme;
    };
    for (name, v) in slots {
        let style = match slot_style(v, &palette) {
            Ok(s) => s,
            Err(e) => {
                warnings.push(format!("theme {source}: slots.{name}: {e}"));
                continue;
            }
        };
        match theme.slot_mut(name) {
            Some(slot) => *slot = style,
            None => warnings.push(format!("theme {source}: unknown slot {name:?}")),
        }
    }
    theme
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn color_ref(v: &str, palette: &BTreeMap<String, Color>) -> Result<Color, String> {
    palette.get(v).copied().map_or_else(|| parse_color(v), Ok)
}

/// A slot: `"colour"` (the foreground) or `{ fg, bg, bold, italic, underline, reversed, dim }`.
fn slot_style(v: &toml::Value, palette: &BTreeMap<String, Color>) -> Result<Style, String> {
    if let Some(s) = v.as_str() {
        return Ok(Style::new().fg(color_ref(s, palette)?));
    }
    let t = v
        .as_table()
        .ok_or("expected a colour or a table { fg, bg, bold, ... }")?;
    let mut style = Style::new();
    for (k, v) in t {
        match k.as_str() {
            "fg" | "bg" => {
                let c = color_ref(v.as_str().ok_or(format!("{k}: not a string"))?, palette)?;
                style = if k == "fg" { style.fg(c) } else { style.bg(c) };
            }
            "bold" | "italic" | "underline" | "reversed" | "dim" => {
                if v.as_bool().ok_or(format!("{k}: expected true or false"))? {
                    style = style.add_modifier(match k.as_str() {
                        "bold" => Modifier::BOLD,
                        "italic" => Modifier::ITALIC,
                        "underline" => Modifier::UNDERLINED,
                        "reversed" => Modifier::REVERSED,
                        _ => Modifier::DIM,
                    });
                }
            }
            other => return Err(format!("unknown attribute {other:?}")),
        }
    }
    Ok(style)
}

/// `#rrggbb`, an ANSI colour name (`red`, `light-red`, `dark-gray`, ...), `reset`, or an
/// index 0..=255.
pub fn parse_color(s: &str) -> Result<Color, String> {
    let s = s.trim();
    if let Some(hex) = s.strip_prefix('#') {
        if hex.len() == 6
            && let Ok(v) = u32::from_str_radix(hex, 16)
        {
            return Ok(Color::Rgb((v >> 16) as u8, (v >> 8) as u8, v as u8));
        }
        return Err(format!("bad colour {s:?} (expected #rrggbb)"));
    }
    if let Ok(i) = s.parse::<u8>() {
        return Ok(Color::Indexed(i));
    }
    Ok(match s.to_ascii_lowercase().replace('_', "-").as_str() {
        "reset" | "default" => Color::Reset,
        "black" => Color::Black,
        "red" => Color::Red,
        "green" => Color::Green,
        "yellow" => Color::Yellow,
        "blue" => Color::Blue,
        "magenta" => Color::Magenta,
        "cyan" => Color::Cyan,
        "gray" | "grey" => Color::Gray,
        "dark-gray" | "dark-grey" => Color::DarkGray,
        "light-red" => Color::LightRed,
        "light-green" => Color::LightGreen,
        "light-yellow" => Color::LightYellow,
        "light-blue" => Color::LightBlue,
        "light-magenta" => Color::LightMagenta,
        "light-cyan" => Color::LightCyan,
        "white" => Color::White,
        _ => return Err(format!("unknown colour {s:?}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_themes_load_without_warnings() {
        for (name, _) in BUNDLED {
            let mut w = Vec::new();
            let t = load(name, None, &mut w).unwrap();
            assert!(w.is_empty(), "{name}: {w:?}");
            assert_eq!(t.name, name);
        }
    }

    #[test]
    fn a_theme_file_past_the_limit_is_a_warning_unread() {
        let dir = std::env::temp_dir().join(format!("kubestep-theme-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("big.toml");
        // Sparse: 16 MiB and one byte of zeros, no disk.
        std::fs::File::create(&big)
            .and_then(|f| f.set_len((16 << 20) + 1))
            .unwrap();
        let mut w = Vec::new();
        assert!(load(big.to_str().unwrap(), None, &mut w).is_none());
        assert_eq!(
            w,
            [format!(
                "theme file {}: larger than 16 MiB (the most kubestep reads of a theme file)",
                big.display()
            )]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn mono_has_no_colour() {
        let t = Theme::mono();
        assert_eq!(t.verdict_fail.fg, None);
        assert!(t.selection.add_modifier.contains(Modifier::REVERSED));
    }

    #[test]
    fn bad_theme_file_gives_warnings_not_errors() {
        let mut w = Vec::new();
        let t = parse(
            "bad.toml",
            "[palette]\nx = \"#zzzzzz\"\n[slots]\nverdict_pass = \"green\"\nnope = \"red\"\nfocus = { fg = \"x\" }\n",
            &mut w,
        );
        assert_eq!(t.verdict_pass.fg, Some(Color::Green));
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w[0].contains("palette.x"));
        let mut w = Vec::new();
        parse("broken.toml", "slots = [", &mut w);
        assert!(w[0].starts_with("theme broken.toml:"), "{w:?}");
    }

    #[test]
    fn choice_order() {
        let mut w = Vec::new();
        let tc = ColorEnv {
            no_color: false,
            truecolor: true,
        };
        assert_eq!(resolve(None, None, tc, None, &mut w).name, "dark");
        let plain = ColorEnv::default();
        assert_eq!(resolve(None, None, plain, None, &mut w).name, "ansi16");
        let nc = ColorEnv {
            no_color: true,
            truecolor: true,
        };
        assert_eq!(resolve(None, Some("light"), nc, None, &mut w).name, "mono");
        assert_eq!(resolve(Some("light"), None, nc, None, &mut w).name, "light");
        assert!(w.is_empty());
        assert_eq!(resolve(Some("nosuch"), None, tc, None, &mut w).name, "dark");
        assert_eq!(w.len(), 2);
    }

    #[test]
    fn user_dir_overrides_bundled() {
        let dir = std::env::temp_dir().join(format!("kubestep-theme-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("dark.toml"), "name = \"my-dark\"\n").unwrap();
        let mut w = Vec::new();
        let t = load("dark", Some(&dir), &mut w).unwrap();
        assert_eq!(t.name, "my-dark");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
