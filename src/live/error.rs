//! Errors talking to a live cluster, in words a person can act on: which server could not
//! be reached, which credentials were refused, which permission (verb, resource, scope) is
//! missing.

use kubestep_engine::redact;

use super::kinds::Kind;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LiveError {
    /// The kubeconfig could not be found, read or used.
    #[error("{0}")]
    Kubeconfig(String),
    #[error(
        "cannot reach the API server at {server}: {reason} (is the cluster running, and is the server address in the kubeconfig right?)"
    )]
    Unreachable { server: String, reason: String },
    #[error(
        "the API server at {server} refused the credentials (401 Unauthorized): they are missing, invalid or expired; log in again or check the user of the kubeconfig context"
    )]
    Unauthorized { server: String },
    #[error("missing permission: {verb} {resource} ({group_version}) {scope}{said}")]
    Forbidden {
        verb: String,
        resource: String,
        group_version: String,
        /// "in namespace X", "in all namespaces" or "at cluster scope".
        scope: String,
        /// The API server's own words, after "; ".
        said: String,
    },
    #[error("{what}: {message}")]
    Api { what: String, message: String },
    /// Several denials at once (every kind whose list was refused), each a `Forbidden`
    /// or `Unauthorized`.
    #[error("{}", denials_text(.0))]
    Denied(Vec<LiveError>),
    /// A phase ended by `--duration` or a signal before it was done, in words.
    #[error("{0}")]
    Stopped(String),
}

impl LiveError {
    /// Stopped (a signal, `--duration`, q) before every kind's first list arrived: `what`
    /// says which kinds are missing; the last error of each of them follows.
    pub(crate) fn stopped_before_first_lists(
        what: String,
        missing: &[&str],
        last_errors: &[(&'static str, String)],
    ) -> LiveError {
        let errors: Vec<String> = last_errors
            .iter()
            .filter(|(k, _)| missing.contains(k))
            .map(|(k, e)| format!("{k}: {e}"))
            .collect();
        let mut text = format!("stopped before the first list of every kind arrived{what}");
        if !errors.is_empty() {
            text.push_str(&format!(" (last errors: {})", errors.join("; ")));
        }
        LiveError::Stopped(text)
    }
}

fn denials_text(all: &[LiveError]) -> String {
    match all {
        [one] => one.to_string(),
        _ => {
            let mut out = format!("{} permissions missing:", all.len());
            for e in all {
                let line = e.to_string();
                out.push_str("\n  - ");
                out.push_str(line.strip_prefix("missing permission: ").unwrap_or(&line));
            }
            out
        }
    }
}

impl LiveError {
    /// Joins denials into one error (one denial stays as it was).
    pub fn denied(mut all: Vec<LiveError>) -> LiveError {
        all.dedup();
        match all.len() {
            1 => all.remove(0),
            _ => LiveError::Denied(all),
        }
    }

    /// Whether some permission is missing (a role would help; refused credentials it
    /// would not).
    pub fn needs_rbac(&self) -> bool {
        self.denials()
            .iter()
            .any(|d| matches!(d, LiveError::Forbidden { .. }))
    }

    /// The denials inside: itself, or each of a `Denied`.
    pub fn denials(&self) -> Vec<&LiveError> {
        match self {
            LiveError::Denied(v) => v.iter().collect(),
            e if e.is_access_denied() => vec![e],
            _ => Vec::new(),
        }
    }
}

impl LiveError {
    /// Whether retrying cannot help without someone changing the credentials or RBAC.
    pub fn is_access_denied(&self) -> bool {
        matches!(
            self,
            LiveError::Unauthorized { .. } | LiveError::Forbidden { .. } | LiveError::Denied(_)
        )
    }
}

/// What was being done when a request failed.
#[derive(Debug, Clone, Copy)]
pub struct Doing<'a> {
    pub verb: &'a str,
    pub kind: Option<&'a Kind>,
    /// The namespace of a namespaced request; `None` for all namespaces.
    pub namespace: Option<&'a str>,
    pub server: &'a str,
}

/// Maps a kube client error to a clear message.
pub fn classify(e: &kube::Error, doing: Doing<'_>) -> LiveError {
    if let Some(a) = auth_error(e) {
        return LiveError::Kubeconfig(credential_fault(a));
    }
    match e {
        kube::Error::Api(s) if s.code == 401 => LiveError::Unauthorized {
            server: doing.server.into(),
        },
        kube::Error::Api(s) if s.code == 403 => {
            let (resource, group_version, scope) = match doing.kind {
                Some(k) => {
                    let scope = match (k.namespaced, doing.namespace) {
                        (false, _) => "at cluster scope".to_string(),
                        (true, Some(ns)) => format!("in namespace {ns}"),
                        (true, None) => "in all namespaces".to_string(),
                    };
                    (k.plural.to_string(), k.group_version(), scope)
                }
                None => (
                    s.details
                        .as_ref()
                        .map(|d| d.kind.clone())
                        .unwrap_or_default(),
                    String::new(),
                    String::new(),
                ),
            };
            LiveError::Forbidden {
                verb: doing.verb.into(),
                resource,
                group_version,
                scope,
                said: if s.message.is_empty() {
                    String::new()
                } else {
                    format!("; the API server says: {}", s.message)
                },
            }
        }
        kube::Error::Api(s) => LiveError::Api {
            what: what(doing),
            message: format!("{} ({} {})", s.message, s.code, s.reason),
        },
        kube::Error::HyperError(_) | kube::Error::Service(_) => LiveError::Unreachable {
            server: doing.server.into(),
            reason: root_cause(e),
        },
        other => LiveError::Api {
            what: what(doing),
            message: chain(other),
        },
    }
}

fn what(doing: Doing<'_>) -> String {
    match doing.kind {
        Some(k) => format!("{} {} ({})", doing.verb, k.plural, k.group_version()),
        None => format!("{} {}", doing.verb, doing.server),
    }
}

/// The credential step's error inside a request's error, if that is what failed.
fn auth_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a kube::client::AuthError> {
    let mut cur = Some(e);
    while let Some(c) = cur {
        if let Some(a) = c.downcast_ref::<kube::client::AuthError>() {
            return Some(a);
        }
        if let Some(kube::Error::Auth(a)) = c.downcast_ref::<kube::Error>() {
            return Some(a);
        }
        cur = c.source();
    }
    None
}

/// The credential step's fault inside `e`, in words (see `credential_fault`).
pub(crate) fn credential_fault_in(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    auth_error(e).map(credential_fault)
}

/// Why the user's credentials could not be obtained, without what kube-rs would quote: an
/// exec plugin's command line (with its environment), output and errors, which carry
/// tokens.
fn credential_fault(a: &kube::client::AuthError) -> String {
    use kube::client::AuthError as A;
    let plugin = "the exec credential plugin of the kubeconfig's user";
    match a {
        A::AuthExecRun { out, .. } => format!(
            "{plugin} failed ({}); its output is not shown, as it may hold credentials: run the plugin yourself to see it",
            out.status
        ),
        A::AuthExecStart(io) => format!("{plugin} could not be started: {io}"),
        A::AuthExecParse(p) => format!(
            "{plugin} printed something that is not an ExecCredential{}",
            p.location()
                .map(|l| format!(" (line {}, column {})", l.line(), l.column()))
                .unwrap_or_default()
        ),
        A::AuthExec(_) => {
            format!("{plugin} failed; its message is not shown, as it may hold credentials")
        }
        other => format!(
            "the kubeconfig's credentials cannot be used: {}",
            redact::text(&other.to_string())
        ),
    }
}

/// Whether retrying may get over a failed request: the server's 5xx, 429 or 408, a
/// connection cut or timed out, an answer that was not JSON (a proxy's error page). Not
/// refused credentials or permissions, a 404, a connection refused (nothing listens at
/// that address) or a TLS failure (invalid data on the connection).
pub fn transient(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => s.code >= 500 || s.code == 429 || s.code == 408,
        kube::Error::HyperError(_) | kube::Error::Service(_) => {
            let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
            while let Some(c) = cur {
                if let Some(io) = c.downcast_ref::<std::io::Error>()
                    && matches!(
                        io.kind(),
                        std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::InvalidData
                    )
                {
                    return false;
                }
                cur = c.source();
            }
            true
        }
        kube::Error::SerdeError(_) | kube::Error::ReadEvents(_) => true,
        _ => false,
    }
}

/// A failed request's cause in a few words: the server's words and status ("etcdserver:
/// request timed out (500 InternalError)"), or the innermost client error ("connection
/// closed before message completed").
pub fn cause(e: &kube::Error) -> String {
    if let Some(a) = auth_error(e) {
        return credential_fault(a);
    }
    match e {
        kube::Error::Api(s) => format!("{} ({} {})", s.message, s.code, s.reason),
        kube::Error::HyperError(_) | kube::Error::Service(_) => root_cause(e),
        other => chain(other),
    }
}

/// The innermost cause: "Connection refused (os error 111)" rather than the layers of
/// client wrappers around it.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    redact::text(&cur.to_string()).into_owned()
}

/// Every message of an error's chain, outermost first.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(c) = cur {
        let s = c.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
        cur = c.source();
    }
    redact::text(&parts.join(": ")).into_owned()
}

/// A watcher error: the request it was making, and the client error inside.
pub fn classify_watch(
    e: &kube::runtime::watcher::Error,
    kind: &Kind,
    namespace: Option<&str>,
    server: &str,
) -> LiveError {
    use kube::runtime::watcher::Error as W;
    let doing = |verb| Doing {
        verb,
        kind: Some(kind),
        namespace,
        server,
    };
    match e {
        W::InitialListFailed(c) => classify(c, doing("list")),
        W::WatchStartFailed(c) | W::WatchFailed(c) => classify(c, doing("watch")),
        W::WatchError(s) => classify(&kube::Error::Api(s.clone()), doing("watch")),
        W::NoResourceVersion => LiveError::Api {
            what: what(doing("list")),
            message: e.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::KINDS;

    fn status(code: u16, message: &str) -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status {
            code,
            message: message.into(),
            ..Default::default()
        }))
    }

    #[test]
    fn forbidden_names_verb_resource_and_scope() {
        let pods = KINDS.iter().find(|k| k.kind == "Pod").unwrap();
        let nodes = KINDS.iter().find(|k| k.kind == "Node").unwrap();
        let doing = Doing {
            verb: "list",
            kind: Some(pods),
            namespace: Some("team"),
            server: "https://x",
        };
        let e = classify(&status(403, ""), doing);
        assert_eq!(
            e.to_string(),
            "missing permission: list pods (core/v1) in namespace team"
        );
        let doing = Doing {
            kind: Some(nodes),
            verb: "watch",
            ..doing
        };
        let e = classify(&status(403, "nodes is forbidden"), doing);
        assert_eq!(
            e.to_string(),
            "missing permission: watch nodes (core/v1) at cluster scope; the API server says: nodes is forbidden"
        );
        assert!(e.is_access_denied());
        assert!(
            classify(&status(401, "Unauthorized"), doing)
                .to_string()
                .contains("refused the credentials (401 Unauthorized)")
        );
    }
}
