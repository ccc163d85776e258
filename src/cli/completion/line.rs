//! The command line being completed. clap_complete hands a completer only the word under
//! the cursor; which cluster, namespace and context the names come from is said elsewhere
//! on the line (`--cluster`, `-n`, `--context`), so the whole line is kept here for the
//! completers to read.

use std::cell::RefCell;
use std::path::PathBuf;

thread_local! {
    /// The words of the line, the program's name first. The engine calls the completers
    /// on the thread that completes, so each completion (and each test) has its own.
    static WORDS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Remembers the line being completed, for [`given`].
pub fn set(words: Vec<String>) {
    WORDS.with(|w| *w.borrow_mut() = words);
}

/// What the line being completed says about where names come from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Given {
    /// The subcommand (`explain`, `live`, ...), the first word that is not a flag.
    pub subcommand: Option<String>,
    /// `--cluster` values, in order.
    pub clusters: Vec<String>,
    /// `-n`/`--namespace`, when given a value.
    pub namespace: Option<String>,
    /// `-A`/`--all-namespaces`.
    pub all_namespaces: bool,
    pub context: Option<String>,
    pub kubeconfig: Option<PathBuf>,
}

/// Reads the remembered line.
pub fn given() -> Given {
    WORDS.with(|w| scan(&w.borrow()))
}

/// The flags that matter here, read from `words` (the program's name first) the way clap
/// reads them: `--flag VALUE`, `--flag=VALUE`, `-n VALUE`, `-nVALUE`, `-n=VALUE`, short
/// flags grouped (`-An`). Reading stops at `--`. A flag given an empty value (the word
/// being completed, still empty) counts as not given.
pub fn scan(words: &[String]) -> Given {
    let mut g = Given::default();
    let mut i = 1;
    // The value after a flag: attached (`=VALUE`), else the next word (bash splits
    // `--flag=VALUE` at `=` into three words; the `=` is skipped).
    let value = |attached: Option<&str>, i: &mut usize| -> Option<String> {
        if let Some(v) = attached {
            return Some(v.to_string());
        }
        let mut next = words.get(*i + 1)?;
        *i += 1;
        if next == "=" {
            next = words.get(*i + 1)?;
            *i += 1;
        }
        Some(next.clone())
    };
    while i < words.len() {
        let w = words[i].as_str();
        if w == "--" {
            break;
        }
        if let Some(long) = w.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            match name {
                "cluster" => g.clusters.extend(value(attached, &mut i)),
                "namespace" => g.namespace = value(attached, &mut i),
                "context" => g.context = value(attached, &mut i),
                "kubeconfig" => g.kubeconfig = value(attached, &mut i).map(PathBuf::from),
                "all-namespaces" => g.all_namespaces = true,
                _ => {}
            }
        } else if let Some(shorts) = w.strip_prefix('-').filter(|s| !s.is_empty()) {
            for (at, c) in shorts.char_indices() {
                match c {
                    'A' => g.all_namespaces = true,
                    'n' => {
                        let rest = &shorts[at + 1..];
                        let rest = rest.strip_prefix('=').unwrap_or(rest);
                        let attached = (!rest.is_empty()).then_some(rest);
                        g.namespace = value(attached, &mut i);
                        break;
                    }
                    _ => {}
                }
            }
        } else if g.subcommand.is_none() {
            g.subcommand = Some(w.to_string());
        }
        i += 1;
    }
    g.namespace = g.namespace.filter(|n| !n.is_empty());
    g.context = g.context.filter(|c| !c.is_empty());
    g.kubeconfig = g.kubeconfig.filter(|k| !k.as_os_str().is_empty());
    g.clusters.retain(|c| !c.is_empty());
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn reads_the_flags_clap_would() {
        let g = scan(&words(
            "kubestep explain --cluster a.yaml --cluster=b.yaml -n ml --context=prod --kubeconfig kc x",
        ));
        assert_eq!(g.subcommand.as_deref(), Some("explain"));
        assert_eq!(g.clusters, ["a.yaml", "b.yaml"]);
        assert_eq!(g.namespace.as_deref(), Some("ml"));
        assert_eq!(g.context.as_deref(), Some("prod"));
        assert_eq!(g.kubeconfig, Some(PathBuf::from("kc")));
        assert!(!g.all_namespaces);
        assert_eq!(
            scan(&words("kubestep explain -nshop")).namespace.as_deref(),
            Some("shop")
        );
        assert_eq!(
            scan(&words("kubestep explain -n=shop"))
                .namespace
                .as_deref(),
            Some("shop")
        );
        assert_eq!(
            scan(&words("kubestep explain --namespace = shop"))
                .namespace
                .as_deref(),
            Some("shop")
        );
        let g = scan(&words("kubestep explain -An ml"));
        assert!(g.all_namespaces);
        assert_eq!(g.namespace.as_deref(), Some("ml"));
        assert!(scan(&words("kubestep live --all-namespaces")).all_namespaces);
    }

    #[test]
    fn an_empty_value_is_no_value_and_reading_stops_at_the_escape() {
        // `-n ` with the cursor after it: the word being completed is still empty.
        let g = scan(&words("kubestep explain --cluster  -n "));
        assert_eq!(g.namespace, None);
        assert!(g.clusters.is_empty());
        let g = scan(&words("kubestep explain -- -n ml"));
        assert_eq!(g.namespace, None);
        // A flag at the end of the line has no value yet.
        assert_eq!(scan(&words("kubestep explain -n")).namespace, None);
    }
}
