//! `kubectl kubestep <TAB>`: since 1.26 (kubernetes PR 105867) kubectl completes a
//! plugin's arguments by running `kubectl_complete-<plugin>` from PATH with the words
//! after `kubectl <plugin>` (the last one the word being completed, maybe empty), and
//! reads the answer Cobra's hidden `__complete` command gives: a candidate a line
//! (`value<TAB>description`), then `:N`, N being Cobra's ShellCompDirective. kubestep is
//! that executable when started under that name (a link to the binary).

use std::ffi::{OsStr, OsString};
use std::path::Path;

/// The executable kubectl looks for to complete `kubectl kubestep ...`.
pub const COMPLETER: &str = "kubectl_complete-kubestep";

/// Cobra's ShellCompDirective bits kubestep uses.
const NO_SPACE: u32 = 2;
const NO_FILE_COMP: u32 = 4;
const ERROR: u32 = 1;

/// Whether this process was started as [`COMPLETER`] (argv[0] is the path kubectl ran).
pub fn invoked_for_kubectl(argv0: Option<&OsStr>) -> bool {
    argv0
        .and_then(|a| Path::new(a).file_stem())
        .is_some_and(|n| n == COMPLETER)
}

/// The answer for `words` (the program's name first, the word being completed last), as
/// Cobra's `__complete` prints it. The directive lets the shell complete files itself
/// only when files are among the candidates (then the shell's own file completion is what
/// the user expects), and keeps the cursor after a directory's `/`.
pub fn answer(cmd: &mut clap::Command, words: Vec<OsString>, cwd: Option<&Path>) -> String {
    let index = words.len() - 1;
    let current = words[index].to_string_lossy().into_owned();
    let Ok(candidates) = clap_complete::engine::complete(cmd, words, index, cwd) else {
        return format!(":{ERROR}\n");
    };
    // `--flag=VALUE`: clap's engine answers `--flag=VALUE...`, Cobra the value alone
    // (the shell's word starts after the `=`).
    let flag = current
        .starts_with("--")
        .then(|| current.split_once('='))
        .flatten()
        .map(|(flag, _)| format!("{flag}="));
    let mut out = String::new();
    let mut files = false;
    let mut dirs_only = !candidates.is_empty();
    for c in &candidates {
        let value = c.get_value().to_string_lossy();
        // A name with a line break or a tab cannot be written in this format.
        if value.chars().any(char::is_control) {
            continue;
        }
        let value = match &flag {
            Some(f) => value.strip_prefix(f.as_str()).unwrap_or(&value),
            None => &value,
        };
        files |= names_a_file(value, cwd);
        dirs_only &= value.ends_with('/');
        out.push_str(value);
        if let Some(help) = c.get_help() {
            let help = help.to_string();
            let first = help.lines().next().unwrap_or_default();
            if !first.is_empty() {
                out.push('\t');
                out.extend(first.chars().map(|c| if c.is_control() { ' ' } else { c }));
            }
        }
        out.push('\n');
    }
    let mut directive = if files { 0 } else { NO_FILE_COMP };
    if dirs_only {
        directive |= NO_SPACE;
    }
    out.push_str(&format!(":{directive}\n"));
    out
}

/// Whether a candidate is a file or directory (relative to `cwd`, or under `~/`).
fn names_a_file(value: &str, cwd: Option<&Path>) -> bool {
    let path = match value.strip_prefix("~/") {
        Some(rest) => match std::env::home_dir() {
            Some(home) => home.join(rest),
            None => return false,
        },
        None => match cwd {
            Some(d) => d.join(value),
            None => Path::new(value).to_path_buf(),
        },
    };
    path.exists()
}
