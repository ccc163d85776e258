//! The keymap: keys to commands, with defaults (vim keys and arrows both), overrides from
//! the config file's `[keys]` table (bad entries become warnings), and the help text
//! generated from it.

use std::collections::BTreeMap;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::{Command, Tab};
use super::components::{panes, tabs};

/// A key as the keymap knows it: the code, plus Ctrl/Alt, and Shift for keys that are
/// not characters (a character's Shift is in the character: `G`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub code: KeyCodeOrd,
    pub ctrl: bool,
    pub alt: bool,
    pub shift: bool,
}

/// `KeyCode` subset with an order, so help lists keys stably.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeyCodeOrd {
    Char(char),
    F(u8),
    Enter,
    Esc,
    Tab,
    BackTab,
    Backspace,
    Left,
    Right,
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    Delete,
}

impl Key {
    pub fn from_event(e: &KeyEvent) -> Option<Key> {
        let code = match e.code {
            KeyCode::Char(c) => KeyCodeOrd::Char(c),
            KeyCode::F(n) => KeyCodeOrd::F(n),
            KeyCode::Enter => KeyCodeOrd::Enter,
            KeyCode::Esc => KeyCodeOrd::Esc,
            KeyCode::Tab => KeyCodeOrd::Tab,
            KeyCode::BackTab => KeyCodeOrd::BackTab,
            KeyCode::Backspace => KeyCodeOrd::Backspace,
            KeyCode::Left => KeyCodeOrd::Left,
            KeyCode::Right => KeyCodeOrd::Right,
            KeyCode::Up => KeyCodeOrd::Up,
            KeyCode::Down => KeyCodeOrd::Down,
            KeyCode::PageUp => KeyCodeOrd::PageUp,
            KeyCode::PageDown => KeyCodeOrd::PageDown,
            KeyCode::Home => KeyCodeOrd::Home,
            KeyCode::End => KeyCodeOrd::End,
            KeyCode::Delete => KeyCodeOrd::Delete,
            _ => return None,
        };
        // BackTab is Shift-Tab already: crossterm reports it with Shift as well.
        let shift = !matches!(code, KeyCodeOrd::Char(_) | KeyCodeOrd::BackTab)
            && e.modifiers.contains(KeyModifiers::SHIFT);
        Some(Key {
            code,
            ctrl: e.modifiers.contains(KeyModifiers::CONTROL),
            alt: e.modifiers.contains(KeyModifiers::ALT),
            shift,
        })
    }

    /// `n`, `G`, `ctrl-c`, `alt-x`, `shift-left`, `space`, `enter`, `esc`, `tab`,
    /// `backtab`, `left`, `pgup`, `home`, `f1`, ...
    pub fn parse(s: &str) -> Result<Key, String> {
        let mut ctrl = false;
        let mut alt = false;
        let mut shift = false;
        let mut rest = s;
        loop {
            let lower = rest.to_ascii_lowercase();
            if rest.len() > 1 && lower.starts_with("ctrl-") {
                ctrl = true;
                rest = &rest[5..];
            } else if rest.len() > 1 && lower.starts_with("alt-") {
                alt = true;
                rest = &rest[4..];
            } else if rest.len() > 1 && lower.starts_with("shift-") && lower != "shift-tab" {
                shift = true;
                rest = &rest[6..];
            } else {
                break;
            }
        }
        let mut chars = rest.chars();
        let code = match (chars.next(), chars.next()) {
            (Some(c), None) => KeyCodeOrd::Char(c),
            (None, _) => return Err(format!("empty key in {s:?}")),
            _ => match rest.to_ascii_lowercase().as_str() {
                "space" => KeyCodeOrd::Char(' '),
                "enter" | "return" => KeyCodeOrd::Enter,
                "esc" | "escape" => KeyCodeOrd::Esc,
                "tab" => KeyCodeOrd::Tab,
                "backtab" | "shift-tab" => KeyCodeOrd::BackTab,
                "backspace" => KeyCodeOrd::Backspace,
                "left" => KeyCodeOrd::Left,
                "right" => KeyCodeOrd::Right,
                "up" => KeyCodeOrd::Up,
                "down" => KeyCodeOrd::Down,
                "pgup" | "pageup" => KeyCodeOrd::PageUp,
                "pgdn" | "pagedown" => KeyCodeOrd::PageDown,
                "home" => KeyCodeOrd::Home,
                "end" => KeyCodeOrd::End,
                "delete" | "del" => KeyCodeOrd::Delete,
                f if f.starts_with('f') => match f[1..].parse::<u8>() {
                    Ok(n) if (1..=12).contains(&n) => KeyCodeOrd::F(n),
                    _ => return Err(format!("unknown key {s:?}")),
                },
                _ => return Err(format!("unknown key {s:?}")),
            },
        };
        if shift && matches!(code, KeyCodeOrd::Char(_)) {
            return Err(format!(
                "{s:?}: a character's Shift is the character itself (write \"N\", not \"shift-n\")"
            ));
        }
        Ok(Key {
            code,
            ctrl,
            alt,
            shift,
        })
    }

    pub fn label(&self) -> String {
        let base = match self.code {
            KeyCodeOrd::Char(' ') => "space".to_string(),
            KeyCodeOrd::Char(c) => c.to_string(),
            KeyCodeOrd::F(n) => format!("F{n}"),
            KeyCodeOrd::Enter => "Enter".into(),
            KeyCodeOrd::Esc => "Esc".into(),
            KeyCodeOrd::Tab => "Tab".into(),
            KeyCodeOrd::BackTab => "S-Tab".into(),
            KeyCodeOrd::Backspace => "Bksp".into(),
            KeyCodeOrd::Left => "←".into(),
            KeyCodeOrd::Right => "→".into(),
            KeyCodeOrd::Up => "↑".into(),
            KeyCodeOrd::Down => "↓".into(),
            KeyCodeOrd::PageUp => "PgUp".into(),
            KeyCodeOrd::PageDown => "PgDn".into(),
            KeyCodeOrd::Home => "Home".into(),
            KeyCodeOrd::End => "End".into(),
            KeyCodeOrd::Delete => "Del".into(),
        };
        let mut s = String::new();
        if self.ctrl {
            s.push_str("C-");
        }
        if self.alt {
            s.push_str("M-");
        }
        if self.shift {
            s.push_str("S-");
        }
        s.push_str(&base);
        s
    }
}

/// Default keys of the app's own commands; the panes' and tabs' own commands have
/// theirs from their components (`PaneComponent::KEYS`, `TabPane::KEYS`), and the keys
/// that show each tab from its registry entry (`TabInfo::keys`).
pub const DEFAULTS: &[(Command, &[&str])] = &[
    (Command::Step, &["n"]),
    (Command::StepPlugin, &["s"]),
    (Command::FinishPod, &["f"]),
    (Command::ContinuePause, &["c", "space"]),
    (Command::Sprint, &["F"]),
    (Command::Breakpoint, &["b"]),
    (Command::Breakpoints, &["B"]),
    // Time travel keeps the plain arrows and h/l free for moving inside grids; tmux and
    // common terminals report Shift- and Alt-arrows alike (CSI 1;2 and 1;3).
    (Command::Back, &["[", "shift-left", "alt-left"]),
    (Command::Forward, &["]", "shift-right", "alt-right"]),
    (Command::Live, &["end", "0"]),
    (Command::JumpPod, &["p"]),
    (Command::SpeedUp, &["+", "="]),
    (Command::SpeedDown, &["-"]),
    (Command::CommandLine, &[":"]),
    (Command::Help, &["?", "f1"]),
    (Command::Quit, &["q", "ctrl-c"]),
    (Command::Up, &["k", "up"]),
    (Command::Down, &["j", "down"]),
    (Command::PageUp, &["pgup", "ctrl-u"]),
    (Command::PageDown, &["pgdn", "ctrl-d"]),
    (Command::Top, &["g", "home"]),
    (Command::Bottom, &["G"]),
    (Command::FocusNext, &["tab"]),
    (Command::FocusPrev, &["backtab"]),
    (Command::Select, &["enter"]),
    (Command::Cancel, &["esc"]),
    (Command::PaneNarrower, &["{"]),
    (Command::PaneWider, &["}"]),
];

#[derive(Debug, Clone)]
pub struct Keymap {
    bindings: BTreeMap<Key, Command>,
    /// Each command's keys in the order configured (or by default): help lists them so,
    /// and hints name the first.
    ordered: BTreeMap<Command, Vec<Key>>,
}

impl Default for Keymap {
    fn default() -> Self {
        let mut w = Vec::new();
        Keymap::with_overrides(&toml::Table::new(), &mut w)
    }
}

impl Keymap {
    /// The defaults with the config file's `[keys]` entries applied: `command = "key"` or
    /// `command = ["key", ...]` replaces that command's keys.
    pub fn with_overrides(keys: &toml::Table, warnings: &mut Vec<String>) -> Keymap {
        let mut per_command: BTreeMap<Command, Vec<Key>> = BTreeMap::new();
        let show_tabs = Tab::ALL.map(|t| (Command::ShowTab(t), t.info().keys));
        let own = Command::ALL.into_iter().filter_map(|c| match c {
            Command::Own(o) => Some((c, o.keys)),
            _ => None,
        });
        let components = panes::KEYS.iter().chain(tabs::KEYS).flat_map(|k| k.iter());
        let builtin = DEFAULTS.iter().chain(components).chain(&show_tabs).copied();
        for (cmd, keys) in builtin.chain(own) {
            per_command.insert(
                cmd,
                keys.iter().filter_map(|k| Key::parse(k).ok()).collect(),
            );
        }
        // Keys the user's entries gave, to say when two entries claim the same key.
        let mut claimed: BTreeMap<Key, Command> = BTreeMap::new();
        for (name, v) in keys {
            let Some(cmd) = Command::from_name(name) else {
                warnings.push(format!("config [keys]: unknown command {name:?}"));
                continue;
            };
            let list: Vec<&str> = match v {
                toml::Value::String(s) => vec![s.as_str()],
                toml::Value::Array(a) => a.iter().filter_map(toml::Value::as_str).collect(),
                _ => {
                    warnings.push(format!(
                        "config [keys]: {name}: expected a key or a list of keys"
                    ));
                    continue;
                }
            };
            let mut parsed = Vec::new();
            for k in list {
                match Key::parse(k) {
                    Ok(key) => parsed.push(key),
                    Err(e) => warnings.push(format!("config [keys]: {name}: {e}")),
                }
            }
            for k in &parsed {
                if let Some(prev) = claimed.insert(*k, cmd)
                    && prev != cmd
                {
                    warnings.push(format!(
                        "config [keys]: {} bound to both {} and {}; {} keeps it",
                        k.label(),
                        prev.name(),
                        cmd.name(),
                        cmd.name()
                    ));
                }
            }
            if !parsed.is_empty() {
                // A key taken by the user's entry leaves the command it had by default.
                for keys in per_command.values_mut() {
                    keys.retain(|k| !parsed.contains(k));
                }
                per_command.insert(cmd, parsed);
            }
        }
        // Whatever the config says, ctrl-c quits, and so does q unless the user gave it
        // another command: a keymap must never leave a person without a way out.
        let ctrl_c = Key::parse("ctrl-c").expect("ctrl-c parses");
        let q = Key::parse("q").expect("q parses");
        for (cmd, keys) in per_command.iter_mut() {
            if *cmd != Command::Quit && keys.contains(&ctrl_c) {
                keys.retain(|k| *k != ctrl_c);
                warnings.push(format!(
                    "config [keys]: {}: ctrl-c always quits; not bound to {}",
                    cmd.name(),
                    cmd.name()
                ));
            }
        }
        let q_taken = per_command
            .iter()
            .any(|(c, keys)| *c != Command::Quit && keys.contains(&q));
        let quit = per_command.entry(Command::Quit).or_default();
        if !quit.contains(&ctrl_c) {
            quit.push(ctrl_c);
        }
        if quit.len() == 1 && !q_taken {
            quit.push(q);
        }
        let mut bindings = BTreeMap::new();
        for (cmd, keys) in &per_command {
            for k in keys {
                if let Some(prev) = bindings.insert(*k, *cmd)
                    && prev != *cmd
                {
                    warnings.push(format!(
                        "config [keys]: {} bound to both {} and {}",
                        k.label(),
                        prev.name(),
                        cmd.name()
                    ));
                }
            }
        }
        let ordered = per_command
            .into_iter()
            .map(|(cmd, mut keys)| {
                let mut seen = Vec::new();
                keys.retain(|k| {
                    let first = !seen.contains(k);
                    seen.push(*k);
                    first && bindings.get(k) == Some(&cmd)
                });
                (cmd, keys)
            })
            .collect();
        Keymap { bindings, ordered }
    }

    pub fn command(&self, e: &KeyEvent) -> Option<Command> {
        let k = Key::from_event(e)?;
        // An unbound Shift-key does what the key does (Shift-↑ moves up, as it used to).
        self.bindings.get(&k).copied().or_else(|| {
            k.shift
                .then(|| self.bindings.get(&Key { shift: false, ..k }).copied())
                .flatten()
        })
    }

    /// A command's keys, in the order configured (or by default).
    pub fn keys_for(&self, cmd: Command) -> Vec<Key> {
        self.ordered.get(&cmd).cloned().unwrap_or_default()
    }

    /// The one key a hint names for a command (its first, as configured): `n`, `c`.
    pub fn key(&self, cmd: Command) -> String {
        match self.ordered.get(&cmd).and_then(|k| k.first()) {
            Some(k) => k.label(),
            None => format!("({} has no key)", cmd.name()),
        }
    }

    /// `n` or `c/space`: the keys of a command, for help.
    pub fn label(&self, cmd: Command) -> String {
        self.keys_for(cmd)
            .iter()
            .map(Key::label)
            .collect::<Vec<_>>()
            .join("/")
    }

    /// Help by group (`Command::GROUPS` order): each command's name, keys and what it
    /// does, in `Command::ALL` order within a group.
    pub fn help_groups(&self) -> Vec<(&'static str, Vec<(String, Command)>)> {
        Command::groups()
            .into_iter()
            .map(|g| {
                let entries = Command::ALL
                    .iter()
                    .filter(|c| c.group() == g)
                    .map(|c| (self.label(*c), *c))
                    .filter(|(k, _)| !k.is_empty())
                    .collect();
                (g, entries)
            })
            .collect()
    }

    /// Help lines: keys and what they do, in `Command::ALL` order.
    pub fn help(&self) -> Vec<(String, &'static str)> {
        Command::ALL
            .iter()
            .filter_map(|c| {
                let keys = self.label(*c);
                (!keys.is_empty()).then(|| (keys, c.describe()))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, m)
    }

    #[test]
    fn parses_keys() {
        assert_eq!(Key::parse("n").unwrap().code, KeyCodeOrd::Char('n'));
        let k = Key::parse("ctrl-c").unwrap();
        assert!(k.ctrl && k.code == KeyCodeOrd::Char('c'));
        assert_eq!(Key::parse("space").unwrap().code, KeyCodeOrd::Char(' '));
        assert_eq!(Key::parse("F5").unwrap().code, KeyCodeOrd::F(5));
        assert_eq!(Key::parse("-").unwrap().code, KeyCodeOrd::Char('-'));
        assert!(Key::parse("hyper-x").is_err());
        assert!(Key::parse("f13").is_err());
        assert!(Key::parse("").is_err());
        let k = Key::parse("shift-left").unwrap();
        assert!(k.shift && k.code == KeyCodeOrd::Left && k.label() == "S-←");
        assert_eq!(Key::parse("shift-tab").unwrap().code, KeyCodeOrd::BackTab);
        // A character's Shift is the character.
        assert!(Key::parse("shift-n").is_err());
    }

    #[test]
    fn defaults_have_no_conflicts() {
        let mut w = Vec::new();
        let km = Keymap::with_overrides(&toml::Table::new(), &mut w);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(
            km.command(&ev(KeyCode::Char('n'), KeyModifiers::NONE)),
            Some(Command::Step)
        );
        assert_eq!(
            km.command(&ev(KeyCode::Char('G'), KeyModifiers::SHIFT)),
            Some(Command::Bottom)
        );
        assert_eq!(
            km.command(&ev(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Command::Quit)
        );
        assert_eq!(
            km.command(&ev(KeyCode::Left, KeyModifiers::NONE)),
            Some(Command::ColumnLeft)
        );
        assert_eq!(
            km.command(&ev(KeyCode::Left, KeyModifiers::SHIFT)),
            Some(Command::Back)
        );
        assert_eq!(
            km.command(&ev(KeyCode::Right, KeyModifiers::ALT)),
            Some(Command::Forward)
        );
        // Help and hints list a command's keys in the order they were given.
        assert_eq!(km.label(Command::ContinuePause), "c/space");
        assert_eq!(km.key(Command::Back), "[");
        assert_eq!(km.label(Command::Back), "[/S-←/M-←");
        // Every command appears in help.
        assert_eq!(km.help().len(), Command::ALL.len());
    }

    #[test]
    fn two_commands_on_one_key_warn_and_quit_stays_reachable() {
        let keys: toml::Table = "step = \"x\"\nfinish = \"x\"\nhelp = [\"q\", \"ctrl-c\"]\n"
            .parse()
            .unwrap();
        let mut w = Vec::new();
        let km = Keymap::with_overrides(&keys, &mut w);
        assert!(w.iter().any(|x| x.contains("bound to both")), "{w:?}");
        assert!(w.iter().any(|x| x.contains("ctrl-c always quits")), "{w:?}");
        assert_eq!(
            km.command(&ev(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Command::Quit)
        );
    }

    #[test]
    fn overrides_and_warnings() {
        let keys: toml::Table =
            "step = \"N\"\nquit = [\"Q\", \"bogus-key\"]\nfly = \"z\"\nhelp = 3\n"
                .parse()
                .unwrap();
        let mut w = Vec::new();
        let km = Keymap::with_overrides(&keys, &mut w);
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w.iter().any(|x| x.contains("unknown command \"fly\"")));
        assert!(w.iter().any(|x| x.contains("bogus-key")));
        assert_eq!(
            km.command(&ev(KeyCode::Char('N'), KeyModifiers::SHIFT)),
            Some(Command::Step)
        );
        assert_eq!(
            km.command(&ev(KeyCode::Char('n'), KeyModifiers::NONE)),
            None
        );
        assert_eq!(km.keys_for(Command::Quit).len(), 2, "Q and ctrl-c");
        assert!(km.label(Command::Quit).contains('Q'));
        // A key moved to another command leaves its default one.
        let keys: toml::Table = "step = \"c\"\n".parse().unwrap();
        let km = Keymap::with_overrides(&keys, &mut Vec::new());
        assert_eq!(km.label(Command::ContinuePause), "space");
    }
}
