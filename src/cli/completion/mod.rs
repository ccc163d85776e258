//! Shell completion with clap_complete's dynamic engine. `kubestep completions SHELL`
//! prints a small registration script; at each TAB the shell runs kubestep again with
//! the line (`KUBESTEP_COMPLETE=SHELL kubestep -- WORDS...`) and kubestep answers from
//! its own command definition. So the scripts never go stale, and values can come from
//! where the command would read them: pods, namespaces and kubeconfig contexts
//! ([`pods`], [`namespaces`], [`contexts`]), bundled recordings and files wherever a
//! recording is taken ([`RecordingSource`]), `-o` and other fixed values from their
//! ValueEnum. kubectl (1.26+) completes `kubectl kubestep ...` by running
//! `kubectl_complete-kubestep` (kubectl.rs).

mod from_files;
mod from_kubeconfig;
mod kubectl;
mod line;
mod lookup;

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::Path;

use clap::builder::{PossibleValue, TypedValueParser};
use clap_complete::engine::{
    ArgValueCompleter, CompletionCandidate, PathCompleter, ValueCompleter,
};

use kubestep::recording::bundled;

use lookup::{PodState, Scope};

/// The variable the registration scripts set when they call kubestep back (clap's own
/// default, `COMPLETE`, is a common word to find exported for something else).
const VAR: &str = "KUBESTEP_COMPLETE";

/// At most this many values are offered (kubectl lists one page of 1,000 pods).
const MAX_CANDIDATES: usize = 1000;

/// Value parser of an argument that takes a recording: a bundled recording's name or a
/// path. It accepts any UTF-8 value. Its possible values, the bundled names, mark the
/// argument for completion: [`with_completers`] gives every argument so marked the
/// [`recordings`] completer (names and files). The argument should also set
/// `hide_possible_values`, as a path is just as valid.
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

/// Whether `arg` takes a recording: its value parser is [`RecordingSource`] (a parser's
/// type cannot be asked, its possible values can).
fn takes_a_recording(arg: &clap::Arg) -> bool {
    let Some(values) = arg.get_value_parser().possible_values() else {
        return false;
    };
    values
        .map(|v| v.get_name().to_string())
        .eq(bundled::names())
}

/// `cmd` with the [`recordings`] completer on every argument that takes a recording, in
/// every subcommand.
pub fn with_completers(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| {
        if takes_a_recording(&a) {
            a.add(recordings())
        } else {
            a
        }
    })
    .mut_subcommands(with_completers)
}

/// The command completion walks: `cmd` without its hidden subcommands, its options
/// offered only where nothing else is.
///
/// clap's engine drops a hidden candidate only when a visible one is left, so `kubestep
/// kr<TAB>` would offer krew-manifest; clap cannot remove a subcommand, so the top is
/// built again from its arguments and visible subcommands. The same rule makes options
/// come after values, as kubectl has it: with every option hidden, `explain <TAB>` offers
/// pods and `explain --<TAB>` (or a word where no value fits) the options.
fn for_completion(cmd: clap::Command) -> clap::Command {
    let visible: Vec<clap::Command> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    let top = clap::Command::new("kubestep")
        .version(super::version_text())
        .args(cmd.get_arguments().cloned())
        .subcommands(visible);
    let mut top = match cmd.get_bin_name() {
        Some(b) => top.bin_name(b.to_string()),
        None => top,
    };
    // Built first, so that --help and --version are there to hide.
    top.build();
    hide_options(top)
}

fn hide_options(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| if a.is_positional() { a } else { a.hide(true) })
        .mut_subcommands(hide_options)
}

/// When this process was started to complete a line (by a registration script, or by
/// kubectl as `kubectl_complete-kubestep`): prints the candidates and exits. Otherwise
/// returns, having printed nothing. Completing never writes to the terminal beyond the
/// candidates: standard error goes to /dev/null first, for kubestep and for any
/// credential plugin the kubeconfig runs.
pub fn complete_if_asked(command: fn() -> clap::Command) {
    let mut args = std::env::args_os();
    let argv0 = args.next();
    let cwd = std::env::current_dir().ok();
    if kubectl::invoked_for_kubectl(argv0.as_deref()) {
        quiet_stderr();
        let mut words = vec![OsString::from("kubestep")];
        words.extend(args);
        let answer = complete_for_kubectl(&mut for_completion(command()), words, cwd.as_deref());
        use std::io::Write as _;
        let _ = std::io::stdout().lock().write_all(answer.as_bytes());
        std::process::exit(0);
    }
    if std::env::var_os(VAR).is_some_and(|v| !v.is_empty() && v != "0") {
        quiet_stderr();
        // The registration scripts pass the line after `--`.
        let words = std::env::args_os()
            .skip_while(|a| a != "--")
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        line::set(words);
        clap_complete::CompleteEnv::with_factory(move || for_completion(command()))
            .var(VAR)
            .complete();
    }
}

/// kubectl's answer for `words` (`kubestep`, then what followed `kubectl kubestep`, the
/// last being the word under the cursor).
fn complete_for_kubectl(
    cmd: &mut clap::Command,
    mut words: Vec<OsString>,
    cwd: Option<&Path>,
) -> String {
    if words.len() < 2 {
        words.push(OsString::new());
    }
    line::set(
        words
            .iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect(),
    );
    kubectl::answer(cmd, words, cwd)
}

/// Standard error to /dev/null for the rest of the process.
fn quiet_stderr() {
    #[cfg(unix)]
    // SAFETY: open and dup2 take a constant C string and plain descriptors; on failure
    // nothing changes.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
        if null >= 0 {
            libc::dup2(null, 2);
            libc::close(null);
        }
    }
}

/// The registration script for `shell`: it completes `bin` by calling this executable
/// back (by the name it was started as, made absolute when it is a relative path).
pub fn registration(shell: clap_complete::Shell, bin: &str) -> std::io::Result<String> {
    let shells = clap_complete::env::Shells::builtins();
    let Some(env_shell) = shells.completer(&shell.to_string()) else {
        return Err(std::io::Error::other(format!("no completion for {shell}")));
    };
    let mut completer = std::path::PathBuf::from(std::env::args_os().next().unwrap_or_default());
    if completer.components().count() > 1
        && completer.is_relative()
        && let Ok(cwd) = std::env::current_dir()
    {
        completer = cwd.join(completer);
    }
    let mut out = Vec::new();
    env_shell.write_registration(VAR, bin, bin, &completer.to_string_lossy(), &mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Completer of an argument that takes a recording: the bundled recordings' names, then
/// files.
pub fn recordings() -> ArgValueCompleter {
    ArgValueCompleter::new(|current: &OsStr| {
        let word = current.to_string_lossy();
        let mut out: Vec<CompletionCandidate> = bundled::names()
            .filter(|n| n.starts_with(word.as_ref()))
            .map(|n| CompletionCandidate::new(n).help(Some("bundled recording".into())))
            .collect();
        out.extend(PathCompleter::any().complete(current));
        out
    })
}

/// Completer of a POD argument: pod names where the command would look for the pod
/// (`--cluster`'s files or recording, else the kubeconfig's context; `-n`, `-A`), pending
/// pods first. A bare NAME in `-n`'s namespace or the context's; `NAMESPACE/NAME` once
/// the word has a `/`; `pod/NAME` after `pod/`. Where no namespace is known (`-A`, or
/// `--cluster` without `-n`), a name found in several namespaces is offered as
/// `NAMESPACE/NAME`, any other bare. A word that looks like a path (`./`, `/`, `~`, or
/// an existing directory before its `/`) is also completed as a file: POD may be a
/// manifest.
pub fn pods() -> ArgValueCompleter {
    ArgValueCompleter::new(|current: &OsStr| {
        let word = current.to_string_lossy();
        pod_candidates(&line::given(), &word)
    })
}

/// Completer of `-n/--namespace`: the namespaces of `--cluster`'s files or recording
/// (with how many pods each holds and how many are pending), else of the kubeconfig's
/// context's cluster.
pub fn namespaces() -> ArgValueCompleter {
    ArgValueCompleter::new(|current: &OsStr| {
        let word = current.to_string_lossy();
        let Some(found) = lookup::namespaces(&line::given()) else {
            return Vec::new();
        };
        found
            .into_iter()
            .filter(|n| n.name.starts_with(word.as_ref()))
            .take(MAX_CANDIDATES)
            .map(|n| {
                let help = n.pods.map(|(pods, pending)| match (pods, pending) {
                    (0, _) => "no pods".to_string(),
                    (p, 0) => count(p, "pod"),
                    (p, q) => format!("{}, {q} pending", count(p, "pod")),
                });
                CompletionCandidate::new(n.name).help(help.map(Into::into))
            })
            .collect()
    })
}

/// Completer of `--context`: the kubeconfig's contexts (`--kubeconfig`, else
/// `KUBECONFIG`, else `~/.kube/config`), each with its cluster.
pub fn contexts() -> ArgValueCompleter {
    ArgValueCompleter::new(|current: &OsStr| {
        let word = current.to_string_lossy();
        let Some(found) = lookup::contexts(&line::given()) else {
            return Vec::new();
        };
        found
            .into_iter()
            .filter(|c| c.name.starts_with(word.as_ref()))
            .map(|c| {
                let cluster = c.cluster.map(|cl| format!("cluster {cl}"));
                let help = match (c.current, cluster) {
                    (true, Some(cl)) => Some(format!("current, {cl}")),
                    (true, None) => Some("current".to_string()),
                    (false, cl) => cl,
                };
                CompletionCandidate::new(c.name).help(help.map(Into::into))
            })
            .collect()
    })
}

fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// The candidates for a POD word; see [`pods`].
fn pod_candidates(g: &line::Given, word: &str) -> Vec<CompletionCandidate> {
    let mut out = Vec::new();
    if looks_like_a_path(word) {
        out.extend(PathCompleter::any().complete(OsStr::new(word)));
    }
    // `pod/NAME` (`pods/`, `po/`), as kubectl takes it.
    let (kind, rest) = match word.split_once('/') {
        Some((k, rest)) if matches!(k, "pod" | "pods" | "po") => (Some(k), rest),
        _ => (None, word),
    };
    let typed_namespace = match kind {
        None => rest.split_once('/').map(|(ns, _)| ns),
        Some(_) => None,
    };
    let scope = match (typed_namespace, &g.namespace) {
        (Some(ns), _) => Scope::Namespace(ns.to_string()),
        (None, Some(ns)) => Scope::Namespace(ns.clone()),
        (None, None) if g.all_namespaces => Scope::All,
        (None, None) => Scope::Default,
    };
    let Some((pods, one_namespace)) = lookup::pods(g, scope) else {
        return out;
    };
    let mut namespaces_of: HashMap<&str, usize> = HashMap::new();
    for p in &pods {
        *namespaces_of.entry(p.name.as_str()).or_default() += 1;
    }
    let mut found: Vec<(bool, String, Option<String>)> = pods
        .iter()
        .map(|p| {
            let state = match &p.state {
                PodState::Pending => Some("Pending".to_string()),
                PodState::OnNode(n) => Some(format!("on node {n}")),
                PodState::Unknown => None,
            };
            let qualified = format!("{}/{}", p.namespace, p.name);
            let (value, help) = if typed_namespace.is_some() {
                (qualified, state)
            } else if let Some(k) = kind {
                (format!("{k}/{}", p.name), state)
            } else if one_namespace {
                (p.name.clone(), state)
            } else if namespaces_of[p.name.as_str()] > 1 {
                (qualified, state)
            } else {
                let ns = &p.namespace;
                let help = match state {
                    Some(s) => format!("{s}, namespace {ns}"),
                    None => format!("namespace {ns}"),
                };
                (p.name.clone(), Some(help))
            };
            (p.state == PodState::Pending, value, help)
        })
        .filter(|(_, value, _)| value.starts_with(word))
        .collect();
    // Pending pods first (what explain is for), then by name.
    found.sort_by(|a, b| (!a.0, &a.1).cmp(&(!b.0, &b.1)));
    let mut seen = std::collections::HashSet::new();
    found.retain(|(_, value, _)| seen.insert(value.clone()));
    found.truncate(MAX_CANDIDATES);
    out.extend(
        found
            .into_iter()
            .map(|(_, value, help)| CompletionCandidate::new(value).help(help.map(Into::into))),
    );
    out
}

/// A word no pod name starts: `./x`, `/x`, `~/x`, or `dir/x` where `dir` is a directory.
fn looks_like_a_path(word: &str) -> bool {
    word.starts_with(['.', '/', '~'])
        || word
            .rsplit_once('/')
            .is_some_and(|(dir, _)| Path::new(dir).is_dir())
}

#[cfg(test)]
mod tests;
