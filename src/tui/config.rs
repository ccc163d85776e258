//! The TUI's config file (`$XDG_CONFIG_HOME/kubestep/config.toml`, else
//! `~/.config/kubestep/config.toml`): `theme = "NAME|FILE"` and a `[keys]` table.
//! A missing file is fine; a broken one gives warnings and the defaults.

use std::path::{Path, PathBuf};

use super::keymap::Keymap;

#[derive(Debug, Clone, Default)]
pub struct UiConfig {
    pub theme: Option<String>,
    pub keys: toml::Table,
    /// Where user themes live (`<config dir>/themes`).
    pub theme_dir: Option<PathBuf>,
}

/// `$XDG_CONFIG_HOME/kubestep`, else `$HOME/.config/kubestep`.
pub fn config_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("kubestep"))
}

/// Reads the config file at `path` (absent: defaults, no warning).
pub fn load(path: &Path, warnings: &mut Vec<String>) -> UiConfig {
    let theme_dir = path.parent().map(|d| d.join("themes"));
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return UiConfig {
                theme_dir,
                ..Default::default()
            };
        }
        Err(e) => {
            warnings.push(format!("config {}: {e}", path.display()));
            return UiConfig {
                theme_dir,
                ..Default::default()
            };
        }
    };
    parse(&path.display().to_string(), &text, theme_dir, warnings)
}

pub fn parse(
    source: &str,
    text: &str,
    theme_dir: Option<PathBuf>,
    warnings: &mut Vec<String>,
) -> UiConfig {
    let mut cfg = UiConfig {
        theme_dir,
        ..Default::default()
    };
    let doc: toml::Table = match text.parse() {
        Ok(d) => d,
        Err(e) => {
            let msg = e
                .to_string()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            warnings.push(format!("config {source}: {msg}"));
            return cfg;
        }
    };
    for (k, v) in doc {
        match (k.as_str(), v) {
            ("theme", toml::Value::String(s)) => cfg.theme = Some(s),
            ("keys", toml::Value::Table(t)) => cfg.keys = t,
            ("theme" | "keys", _) => warnings.push(format!("config {source}: {k}: wrong type")),
            (other, _) => warnings.push(format!("config {source}: unknown setting {other:?}")),
        }
    }
    cfg
}

impl UiConfig {
    pub fn keymap(&self, warnings: &mut Vec<String>) -> Keymap {
        Keymap::with_overrides(&self.keys, warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_theme_and_keys() {
        let mut w = Vec::new();
        let c = parse(
            "c.toml",
            "theme = \"light\"\n[keys]\nstep = \"N\"\n",
            None,
            &mut w,
        );
        assert!(w.is_empty());
        assert_eq!(c.theme.as_deref(), Some("light"));
        assert!(c.keys.contains_key("step"));
    }

    #[test]
    fn broken_config_is_a_warning() {
        let mut w = Vec::new();
        let c = parse("c.toml", "theme = [\n", None, &mut w);
        assert!(c.theme.is_none());
        assert!(w[0].starts_with("config c.toml:"), "{w:?}");
        let mut w = Vec::new();
        parse("c.toml", "theme = 3\ncolour = 1\n", None, &mut w);
        assert_eq!(w.len(), 2, "{w:?}");
        let mut w = Vec::new();
        let c = load(Path::new("/nonexistent/kubestep/config.toml"), &mut w);
        assert!(w.is_empty() && c.theme.is_none());
    }
}
