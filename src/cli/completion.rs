//! Shell completions: clap_complete's scripts, taught that a recording argument takes a
//! bundled recording's name or any file.
//!
//! clap_complete offers an argument's possible values *instead of* files, and a recording
//! argument takes either. So its value parser lists the bundled names (the scripts offer
//! them) but accepts anything, and each script is then edited where it offers those names
//! to offer files as well.

use std::ffi::OsStr;

use clap::builder::{PossibleValue, TypedValueParser};

use kubestep::recording::bundled;

/// Value parser of an argument that takes a recording: a bundled recording's name or a
/// path. It accepts any UTF-8 value; the names are listed only for completion (the
/// argument should also set `hide_possible_values`, as a path is just as valid).
#[derive(Clone, Copy, Debug)]
pub struct RecordingSource;

impl TypedValueParser for RecordingSource {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(bundled::names().map(PossibleValue::new)))
    }
}

/// The completion script for `shell`, as clap_complete writes it for `cmd` under `name`,
/// with files offered wherever a recording's name is.
pub fn script(shell: clap_complete::Shell, cmd: &mut clap::Command, name: &str) -> String {
    let mut out = Vec::new();
    clap_complete::generate(shell, cmd, name, &mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let names: Vec<&str> = bundled::names().collect();
    match shell {
        clap_complete::Shell::Bash => bash(&text, &names),
        clap_complete::Shell::Zsh => zsh(&text, &names, name),
        clap_complete::Shell::Fish => fish(&text, &names, &recording_positionals(cmd)),
        // Elvish and PowerShell offer the names; files there are the shell's own business.
        _ => text,
    }
}

/// bash: where the names are offered (an option's own `compgen -W "NAMES"`, or the word
/// list of a subcommand whose positional takes a recording), files are added, unless the
/// word being completed is an option. `IFS` is a newline for them, so a file name with
/// spaces stays one word.
fn bash(text: &str, names: &[&str]) -> String {
    let words = names.join(" ");
    let option_line = format!("COMPREPLY=($(compgen -W \"{words}\" -- \"${{cur}}\"))");
    let positional_line = "COMPREPLY=( $(compgen -W \"${opts}\" -- \"${cur}\") )";
    let add_files = |indent: &str| {
        format!(
            "{indent}if [[ ${{cur}} != -* ]]; then\n\
             {indent}    local IFS=$'\\n'\n\
             {indent}    COMPREPLY+=($(compgen -f -- \"${{cur}}\"))\n\
             {indent}    compopt -o filenames 2>/dev/null\n\
             {indent}fi\n"
        )
    };
    let mut out = String::with_capacity(text.len() + 4096);
    // Whether the subcommand block being read offers the names as its positional's.
    let mut names_in_block = false;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        let indent = &line[..line.len() - line.trim_start().len()];
        if trimmed.starts_with("opts=\"") {
            names_in_block = trimmed.contains(&words);
        }
        out.push_str(line);
        if trimmed == option_line || (names_in_block && trimmed == positional_line) {
            out.push_str(&add_files(indent));
        }
    }
    out
}

/// zsh: the `(NAMES)` action becomes a function offering the names and files.
fn zsh(text: &str, names: &[&str], bin: &str) -> String {
    let func = format!("_{}_recordings", bin.replace('-', "_"));
    let action = format!(":({})", names.join(" "));
    let mut out = text.replace(&action, &format!(":{func}"));
    let helper = format!(
        "(( $+functions[{func}] )) ||\n{func}() {{\n    _alternative 'recordings:bundled recording:({})' 'files:file:_files'\n}}\n\n",
        names.join(" ")
    );
    // Defined before the script's last block, which runs the completion when autoloaded.
    match out.rfind("if [ \"$funcstack[1]\" =") {
        Some(i) => out.insert_str(i, &helper),
        None => out.push_str(&helper),
    }
    out
}

/// fish: an option offering the names with files switched off (`-f`) gets them forced
/// on (`-F`); clap_complete leaves positionals' values out, so each subcommand whose
/// positional takes a recording gets a line offering the names beside files.
fn fish(text: &str, names: &[&str], subcommands: &[String]) -> String {
    let Some(first) = names.first() else {
        return text.to_string();
    };
    let mut out = text.replace(
        &format!(" -r -f -a \"{first}\\t"),
        &format!(" -r -F -a \"{first}\\t"),
    );
    // The helper clap_complete defines, named after the binary.
    let helper = text
        .lines()
        .find_map(|l| l.strip_prefix("function "))
        .filter(|f| f.ends_with("_global_optspecs"))
        .map(|f| f.replace("_global_optspecs", "_using_subcommand"));
    let bin = text
        .lines()
        .find_map(|l| l.strip_prefix("complete -c "))
        .and_then(|l| l.split(' ').next());
    if let (Some(helper), Some(bin)) = (helper, bin) {
        for sub in subcommands {
            out.push_str(&format!(
                "complete -c {bin} -n \"{helper} {sub}\" -F -a \"{}\"\n",
                names.join(" ")
            ));
        }
    }
    out
}

/// Subcommands whose positional takes a recording (its value parser lists the names).
fn recording_positionals(cmd: &clap::Command) -> Vec<String> {
    cmd.get_subcommands()
        .filter(|s| {
            s.get_positionals().any(|a| {
                a.get_value_parser().possible_values().is_some_and(|mut v| {
                    let first = bundled::names().next();
                    v.any(|p| Some(p.get_name()) == first)
                })
            })
        })
        .map(|s| s.get_name().to_string())
        .collect()
}
