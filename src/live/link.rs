//! How the watches are doing, in one line for a status bar: connected, re-listing after
//! 410 Gone, reconnecting after an error or a cut connection, or stopped by an access
//! denial.
//!
//! A kind counts as reconnecting until its watch is open again (the client's layer sees
//! the server answer it, `Update::Reconnected`), it shows life (a change or a re-list), or
//! a retry would have failed again: the watchers' backoff never waits longer than 30
//! seconds between attempts.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::LiveError;
use super::watch::Update;

/// Longer than the watchers' longest backoff: an error older than this, with no newer
/// one, means the retry worked.
pub const RETRY_WINDOW: Duration = Duration::from_secs(35);

/// How long a completed re-list stays in the line.
pub const RELIST_SHOWN: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Health {
    Connected,
    /// Some watch is being retried or re-listed; the rest keep working.
    Recovering,
    /// Access was refused: that kind is no longer watched.
    Denied,
}

#[derive(Debug, Clone, Default)]
pub struct LinkStatus {
    /// Kinds whose watch failed, with when and why.
    retrying: BTreeMap<&'static str, (Instant, String)>,
    relisted: Option<(Instant, String)>,
    /// The last kind whose watch came back after a problem, and when.
    restored: Option<(Instant, String)>,
    denied: Option<String>,
    /// Watch errors seen (each one a reconnect attempt by the watcher).
    pub reconnects: u64,
}

impl LinkStatus {
    /// Takes in an update; returns a line worth telling at once (a transition), if any.
    pub fn observe(&mut self, u: &Update, now: Instant) -> Option<String> {
        match u {
            Update::Change(c) => {
                self.retrying.remove(c.kind);
                None
            }
            Update::Synced { kind, .. } => {
                self.retrying.remove(kind);
                None
            }
            Update::Resynced {
                kind,
                added,
                modified,
                deleted,
            } => {
                self.retrying.remove(kind);
                self.relisted = Some((now, kind.to_string()));
                Some(format!(
                    "{kind}: re-listed ({added} added, {modified} modified, {deleted} deleted while away)"
                ))
            }
            Update::Reconnected { kind } => {
                // Every renewed watch says so; only one after a problem is news.
                self.retrying.remove(kind)?;
                self.restored = Some((now, kind.to_string()));
                Some(format!("{kind}: watching again"))
            }
            Update::Reconnecting { kind, error } => {
                self.reconnects += 1;
                let text = error.to_string();
                self.retrying.insert(kind, (now, text));
                Some(retry_text(kind, &error.to_string()))
            }
            Update::Unserved { warning, .. } => Some(warning.clone()),
            Update::Fatal(e) => {
                // The header gets the permission alone; the server's own words go to the
                // status line and the log.
                let short = match e {
                    LiveError::Forbidden {
                        verb,
                        resource,
                        group_version,
                        scope,
                        ..
                    } => format!("missing permission: {verb} {resource} ({group_version}) {scope}"),
                    LiveError::Unauthorized { .. } => "credentials refused (401)".into(),
                    other => other.to_string(),
                };
                self.denied = Some(format!("access denied: {short}"));
                Some(format!("access denied, watch stopped: {e}"))
            }
        }
    }

    /// The state and a short line for a header at `now` (the whole story went to the
    /// status line when it happened).
    pub fn line(&self, now: Instant) -> (Health, String) {
        if let Some(d) = &self.denied {
            return (Health::Denied, d.clone());
        }
        let recent: Vec<String> = self
            .retrying
            .iter()
            .filter(|(_, (at, _))| now.saturating_duration_since(*at) < RETRY_WINDOW)
            .map(|(kind, (_, e))| {
                if gone(e) {
                    format!("re-listing {kind} after 410 Gone")
                } else {
                    format!("reconnecting {kind}")
                }
            })
            .collect();
        if !recent.is_empty() {
            return (Health::Recovering, recent.join(", "));
        }
        let shown = |e: &Option<(Instant, String)>| {
            e.as_ref()
                .filter(|(at, _)| now.saturating_duration_since(*at) < RELIST_SHOWN)
                .map(|(at, kind)| (*at, kind.clone()))
        };
        // The newer of the two news.
        match (shown(&self.relisted), shown(&self.restored)) {
            (Some((a, kind)), Some((b, _))) if a >= b => {
                (Health::Connected, format!("connected · re-listed {kind}"))
            }
            (_, Some((_, kind))) => (Health::Connected, format!("connected · reconnected {kind}")),
            (Some((_, kind)), None) => (Health::Connected, format!("connected · re-listed {kind}")),
            (None, None) => (Health::Connected, "connected".into()),
        }
    }
}

/// A watch that ended because its resourceVersion is too old (410 Gone).
fn gone(error: &str) -> bool {
    error.contains("410") || error.contains("too old")
}

/// The whole story of a retry, for the status line and the log.
fn retry_text(kind: &str, error: &str) -> String {
    if gone(error) {
        format!("re-listing {kind}: 410 Gone, the watch's resourceVersion expired")
    } else {
        format!("{kind}: reconnecting with backoff after error: {error}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(message: &str) -> LiveError {
        LiveError::Api {
            what: "watch pods (core/v1)".into(),
            message: message.into(),
        }
    }

    #[test]
    fn retries_show_until_the_kind_shows_life_or_the_window_passes() {
        let t0 = Instant::now();
        let mut s = LinkStatus::default();
        assert_eq!(s.line(t0), (Health::Connected, "connected".into()));
        let said = s.observe(
            &Update::Reconnecting {
                kind: "Pod",
                error: api("too old resource version (410 Gone)"),
            },
            t0,
        );
        assert!(said.is_some_and(|t| t.starts_with("re-listing Pod: 410 Gone")));
        assert_eq!(
            s.line(t0),
            (Health::Recovering, "re-listing Pod after 410 Gone".into())
        );
        let resynced = Update::Resynced {
            kind: "Pod",
            added: 1,
            modified: 0,
            deleted: 2,
        };
        let said = s.observe(&resynced, t0);
        assert!(said.is_some_and(|t| t.contains("Pod: re-listed (1 added, 0 modified, 2 deleted")));
        assert_eq!(
            s.line(t0),
            (Health::Connected, "connected · re-listed Pod".into())
        );
        assert_eq!(s.line(t0 + RELIST_SHOWN).1, "connected");

        let said = s.observe(
            &Update::Reconnecting {
                kind: "Node",
                error: api("connection reset"),
            },
            t0,
        );
        assert!(said.is_some_and(|t| t.starts_with("Node: reconnecting with backoff after error")));
        let (h, text) = s.line(t0 + Duration::from_secs(1));
        assert_eq!(h, Health::Recovering);
        assert_eq!(text, "reconnecting Node");
        assert_eq!(s.line(t0 + RETRY_WINDOW).0, Health::Connected);
        assert_eq!(s.reconnects, 2);
    }

    #[test]
    fn a_cut_watch_is_reconnecting_until_the_server_opens_it_again() {
        let t0 = Instant::now();
        let mut s = LinkStatus::default();
        // Watches renewed in the normal course of things are no news.
        assert_eq!(s.observe(&Update::Reconnected { kind: "Pod" }, t0), None);
        assert_eq!(s.line(t0).1, "connected");
        let cut = Update::Reconnecting {
            kind: "Pod",
            error: api("the watch's connection was cut: error reading a body from connection"),
        };
        let said = s.observe(&cut, t0);
        assert_eq!(
            said.as_deref(),
            Some(
                "Pod: reconnecting with backoff after error: watch pods (core/v1): the watch's connection was cut: error reading a body from connection"
            )
        );
        assert_eq!(s.line(t0), (Health::Recovering, "reconnecting Pod".into()));
        let said = s.observe(&Update::Reconnected { kind: "Pod" }, t0);
        assert_eq!(said.as_deref(), Some("Pod: watching again"));
        assert_eq!(
            s.line(t0),
            (Health::Connected, "connected · reconnected Pod".into())
        );
        assert_eq!(s.line(t0 + RELIST_SHOWN).1, "connected");
        assert_eq!(s.reconnects, 1);
    }

    #[test]
    fn a_denial_stays() {
        let t0 = Instant::now();
        let mut s = LinkStatus::default();
        let e = LiveError::Forbidden {
            verb: "watch".into(),
            resource: "pods".into(),
            group_version: "core/v1".into(),
            scope: "in all namespaces".into(),
            said: "; the API server says: pods is forbidden".into(),
        };
        let said = s.observe(&Update::Fatal(e), t0);
        assert_eq!(
            said.as_deref(),
            Some(
                "access denied, watch stopped: missing permission: watch pods (core/v1) in all namespaces; the API server says: pods is forbidden"
            )
        );
        let (h, text) = s.line(t0 + Duration::from_secs(3600));
        assert_eq!(h, Health::Denied);
        assert_eq!(
            text,
            "access denied: missing permission: watch pods (core/v1) in all namespaces"
        );
    }
}
