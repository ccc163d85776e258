//! kubestep's config file (`$XDG_CONFIG_HOME/kubestep/config.toml`, else
//! `~/.config/kubestep/config.toml`): defaults for the command line (`context`,
//! `history`, `kube-version`, `feature-gates`), the terminal UI's `theme` and its `[keys]`
//! table. A missing file is fine;
//! a broken one, an unknown key or a bad value gives a warning naming the file, the line
//! and the field, and the defaults: never an error.

use std::path::{Path, PathBuf};

use super::keymap::Keymap;

#[derive(Debug, Clone, Default)]
pub struct UiConfig {
    pub theme: Option<String>,
    /// The kubeconfig context `live` and `record` use without `--context`.
    pub context: Option<String>,
    /// History size (bytes) without `--history`.
    pub history: Option<usize>,
    /// The kube-scheduler version to follow without `--kube-version`.
    pub kube_version: Option<kubestep_engine::features::KubeVersion>,
    /// Feature gates, as `--feature-gates` takes them (the flag's settings come after).
    pub feature_gates: Vec<(String, bool)>,
    pub keys: toml::Table,
    /// The file's name and text, to give `[keys]` warnings their line.
    source: Option<(String, String)>,
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
    let limit = kubestep_engine::limits::WHOLE_FILE;
    let text = match kubestep_engine::limits::read_file_to_string(path, limit, "a config file") {
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
    let at = |key: &str| match line_of(text, None, key) {
        Some(l) => format!("config {source}:{l}: {key}"),
        None => format!("config {source}: {key}"),
    };
    for (k, v) in doc {
        match (k.as_str(), v) {
            ("theme", toml::Value::String(s)) => cfg.theme = Some(s),
            ("context", toml::Value::String(s)) if s.is_empty() => {
                warnings.push(format!("{}: empty context name; ignored", at(&k)))
            }
            ("context", toml::Value::String(s)) => cfg.context = Some(s),
            ("history", toml::Value::String(s)) => match parse_size(&s) {
                Ok(n) => cfg.history = Some(n),
                Err(e) => warnings.push(format!("{}: {e}; the default is used", at(&k))),
            },
            ("history", toml::Value::Integer(n)) if n >= 0 => cfg.history = Some(n as usize),
            ("kube-version", toml::Value::String(v)) => match v.parse() {
                Ok(v) => cfg.kube_version = Some(v),
                Err(e) => warnings.push(format!("{}: {e}; ignored", at(&k))),
            },
            ("feature-gates", toml::Value::String(g)) => {
                match kubestep_engine::features::gates::parse_list(&g) {
                    Ok(g) => cfg.feature_gates = g,
                    Err(e) => warnings.push(format!("{}: {e}; ignored", at(&k))),
                }
            }
            ("kube-version" | "feature-gates", v) => warnings.push(format!(
                "{}: expected a string (such as \"1.36\" or \"A=true,B=false\"), got {}; ignored",
                at(&k),
                v.type_str()
            )),
            ("keys", toml::Value::Table(t)) => cfg.keys = t,
            ("theme" | "context", v) => warnings.push(format!(
                "{}: expected a string, got {}; ignored",
                at(&k),
                v.type_str()
            )),
            ("history", v) => warnings.push(format!(
                "{}: expected a size such as \"64MiB\", got {}; the default is used",
                at(&k),
                v.type_str()
            )),
            ("keys", v) => warnings.push(format!(
                "{}: expected a table ([keys]), got {}; ignored",
                at(&k),
                v.type_str()
            )),
            (other, _) => warnings.push(format!(
                "{}: unknown setting (known: {}); ignored",
                at(other),
                KNOWN.join(", ")
            )),
        }
    }
    cfg.source = Some((source.to_string(), text.to_string()));
    cfg
}

/// The settings the file knows.
pub const KNOWN: [&str; 6] = [
    "context",
    "history",
    "kube-version",
    "feature-gates",
    "theme",
    "keys",
];

/// The line (1-based) where `key` is set, in the table `[section]` or at the top.
pub fn line_of(text: &str, section: Option<&str>, key: &str) -> Option<usize> {
    let mut current: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            current = Some(name.trim().to_string());
            continue;
        }
        if current.as_deref() != section {
            continue;
        }
        let Some((k, _)) = t.split_once('=') else {
            continue;
        };
        let k = k.trim().trim_matches('"').trim_matches('\'');
        if k == key {
            return Some(i + 1);
        }
    }
    None
}

/// A size in bytes: `96MiB`, `512M`, `2G`, `64k`, `1000000` (binary units; `0` keeps
/// nothing).
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| {
        format!("{s:?} is not a size: give a number with an optional unit (e.g. 96MiB)")
    })?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        other => {
            return Err(format!(
                "{s:?} is not a size: unknown unit {other:?} (use KiB, MiB or GiB)"
            ));
        }
    };
    Ok((n * mult) as usize)
}

/// The user's config file, wherever it is (absent: the defaults).
pub fn load_user(warnings: &mut Vec<String>) -> UiConfig {
    match config_dir() {
        Some(dir) => load(&dir.join("config.toml"), warnings),
        None => UiConfig::default(),
    }
}

impl UiConfig {
    pub fn keymap(&self, warnings: &mut Vec<String>) -> Keymap {
        let mut w = Vec::new();
        let keymap = Keymap::with_overrides(&self.keys, &mut w);
        // `config [keys]: NAME: ...` from the keymap, with the file and line.
        for msg in w {
            let located = self.source.as_ref().and_then(|(file, text)| {
                let rest = msg.strip_prefix("config [keys]: ")?;
                let name = rest
                    .strip_prefix("unknown command ")
                    .map(|n| n.trim_matches('"'))
                    .or_else(|| rest.split(':').next())?;
                let line = line_of(text, Some("keys"), name)?;
                Some(format!("config {file}:{line}: [keys] {rest}"))
            });
            warnings.push(located.unwrap_or(msg));
        }
        keymap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_for_the_command_line_with_located_warnings() {
        let text = "# kubestep\ncontext = \"staging\"\nhistory = \"64MiB\"\ntheme = \"mono\"\n";
        let mut w = Vec::new();
        let c = parse("/home/u/.config/kubestep/config.toml", text, None, &mut w);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(c.context.as_deref(), Some("staging"));
        assert_eq!(c.history, Some(64 << 20));
        assert_eq!(c.theme.as_deref(), Some("mono"));

        let text = "history = \"lots\"\ncontext = 7\n\n[keys]\nstep = \"N\"\nfly = \"z\"\n";
        let mut w = Vec::new();
        let c = parse("k.toml", text, None, &mut w);
        assert!(c.history.is_none() && c.context.is_none());
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w.iter()
                .any(|m| m.starts_with("config k.toml:1: history: \"lots\" is not a size")),
            "{w:?}"
        );
        assert!(
            w.iter()
                .any(|m| m.starts_with("config k.toml:2: context: expected a string, got integer")),
            "{w:?}"
        );
        let mut w = Vec::new();
        c.keymap(&mut w);
        assert_eq!(w, ["config k.toml:6: [keys] unknown command \"fly\""]);
    }

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
    fn a_config_past_the_limit_is_a_warning_unread() {
        let dir = std::env::temp_dir().join(format!("kubestep-uiconf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("config.toml");
        std::fs::File::create(&big)
            .and_then(|f| f.set_len((16 << 20) + 1))
            .unwrap();
        let mut w = Vec::new();
        let c = load(&big, &mut w);
        assert!(c.theme.is_none());
        assert_eq!(
            w,
            [format!(
                "config {}: larger than 16 MiB (the most kubestep reads of a config file)",
                big.display()
            )]
        );
        let _ = std::fs::remove_dir_all(&dir);
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
        assert!(
            w.iter()
                .any(|m| m.starts_with("config c.toml:1: theme: expected a string")),
            "{w:?}"
        );
        assert!(
            w.iter()
                .any(|m| m.starts_with("config c.toml:2: colour: unknown setting")),
            "{w:?}"
        );
        let mut w = Vec::new();
        let c = load(Path::new("/nonexistent/kubestep/config.toml"), &mut w);
        assert!(w.is_empty() && c.theme.is_none());
    }
}
