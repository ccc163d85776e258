//! One read of a cluster, for `explain`: every kind the framework reads, LISTed as kubectl
//! lists it (pages of 500 following `continue`, so each kind is read at one
//! resourceVersion), read-only. Each page goes to the dump reader as it arrives (the same
//! code that reads `kubectl get -o json`), so parsing keeps pace with the server and a
//! page is the most held as text.

use std::io::{BufRead, Read};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::{Duration, Instant};

use kube::api::{DynamicObject, ListParams};
use kube::core::Request;
use kube::{Api, Resource};
use serde_json::Value;

use super::connect::Connection;
use super::error::{Doing, LiveError, classify, transient};
use super::kinds::Kind;
use super::watch::{Discovery, discover, unserved_consequence};
use crate::cluster::manifest::Located;
use crate::cluster::object::{Object, find_top_key};
use crate::cluster::stream;

/// Objects per page, as kubectl and client-go's informers ask.
const PAGE: u32 = 500;

/// How long a kind's LIST keeps retrying failures a retry may get over (5xx, dropped
/// connections) before the read gives up: explain is a question, not a watch.
const RETRY_BUDGET: Duration = Duration::from_secs(60);

/// Pages in flight between the connection and the parser.
const PAGES_AHEAD: usize = 4;

/// What one read found.
pub struct ClusterRead {
    pub objects: Vec<Located<Object>>,
    /// What the reader skipped or adjusted (as for a dump).
    pub notes: Vec<String>,
    /// Objects read per kind, in the order read.
    pub counts: Vec<(&'static str, usize)>,
    /// Kinds the server does not serve, and what that means.
    pub warnings: Vec<String>,
    /// KubeSchedulerConfigurations found in kube-system's ConfigMaps: where, and the text.
    pub scheduler_configs: Vec<FoundConfig>,
    /// How long the LISTs took, first request to last byte.
    pub took: Duration,
}

/// A KubeSchedulerConfiguration a ConfigMap holds.
pub struct FoundConfig {
    /// `ConfigMap kube-system/NAME, key KEY`.
    pub place: String,
    pub text: String,
}

/// Reads every kind the engine uses. A LIST refused for lack of permission ends the read
/// naming the permission; a failure a retry may get over (5xx, a dropped connection) is
/// retried with backoff, each retry told to `retrying`.
pub async fn read(
    conn: &Connection,
    mut retrying: impl FnMut(String),
) -> Result<ClusterRead, LiveError> {
    let Discovery {
        kinds,
        unserved_dra,
    } = discover(conn, &mut retrying).await?;
    let started = Instant::now();
    let mut out = ClusterRead {
        objects: Vec::new(),
        notes: Vec::new(),
        counts: Vec::new(),
        warnings: unserved_dra.into_iter().collect(),
        scheduler_configs: Vec::new(),
        took: Duration::ZERO,
    };
    for kind in &kinds {
        let Some((objects, notes)) = read_kind(conn, kind, &mut retrying).await? else {
            // Not served (404): a kind the scheduler can do without is a warning.
            let what = format!(
                "{} ({}) is not served by {} (404)",
                kind.plural,
                kind.group_version(),
                conn.server()
            );
            match unserved_consequence(kind.kind) {
                Some(c) => out
                    .warnings
                    .push(format!("{what}: skipped, so kubestep will not see {c}")),
                None => {
                    return Err(LiveError::Api {
                        what,
                        message: "kubestep cannot schedule without it".into(),
                    });
                }
            }
            continue;
        };
        out.counts.push((kind.kind, objects.len()));
        out.objects.extend(objects);
        out.notes.extend(notes);
    }
    out.took = started.elapsed();
    match scheduler_configs(conn).await {
        Ok(found) => out.scheduler_configs = found,
        Err(e) => out.warnings.push(format!(
            "the scheduler's configuration was not looked for in kube-system's ConfigMaps ({e}); --config FILE gives it"
        )),
    }
    Ok(out)
}

/// One kind, page by page, parsed as the pages arrive. A `continue` token that expired
/// (410: the read took longer than the server keeps history) starts the kind again, as
/// kubectl's pager does.
async fn read_kind(
    conn: &Connection,
    kind: &Kind,
    retrying: &mut impl FnMut(String),
) -> Result<Option<(Vec<Located<Object>>, Vec<String>)>, LiveError> {
    let api: Api<DynamicObject> = Api::all_with(conn.client.clone(), &kind.api_resource());
    let path = api.resource_url().to_string();
    let shown = format!("GET {path}");
    loop {
        let (tx, rx) = sync_channel::<Vec<u8>>(PAGES_AHEAD);
        let name = shown.clone();
        let (kind_name, api_version) = (kind.kind, kind.api_version());
        let parser = tokio::task::spawn_blocking(move || {
            let items_of = Some((kind_name, api_version.as_str()));
            stream::load_items_of(Pages::new(rx), &name, true, items_of)
                .map(|(objects, notes)| (objects, notes.0))
                .map_err(|e| e.to_string())
        });
        let fetched = fetch_pages(conn, kind, &path, tx, retrying).await;
        let parsed = parser.await.map_err(|e| LiveError::Api {
            what: shown.clone(),
            message: format!("the reader stopped: {e}"),
        })?;
        match fetched {
            Ok(()) => {}
            Err(Fetch::Expired) => {
                retrying(format!(
                    "{shown}: the list's continue token expired (410); listing {} again",
                    kind.plural
                ));
                continue;
            }
            Err(Fetch::NotServed) => return Ok(None),
            Err(Fetch::Failed(e)) => return Err(e),
        }
        return parsed.map(Some).map_err(|message| LiveError::Api {
            what: format!("reading {}'s answer", shown),
            message,
        });
    }
}

enum Fetch {
    /// 410 Gone on a `continue`: start again.
    Expired,
    /// 404 on the first page: the server does not serve the kind.
    NotServed,
    Failed(LiveError),
}

async fn fetch_pages(
    conn: &Connection,
    kind: &Kind,
    path: &str,
    tx: SyncSender<Vec<u8>>,
    retrying: &mut impl FnMut(String),
) -> Result<(), Fetch> {
    let request = Request::new(path);
    let mut token: Option<String> = None;
    let mut wait = Duration::from_secs(1);
    let mut waited = Duration::ZERO;
    loop {
        let lp = ListParams {
            limit: Some(PAGE),
            continue_token: token.clone(),
            ..ListParams::default()
        };
        let http = request.list(&lp).map_err(|e| {
            Fetch::Failed(LiveError::Api {
                what: format!("GET {path}"),
                message: e.to_string(),
            })
        })?;
        let page = match conn.client.request_text(http).await {
            Ok(p) => p,
            Err(kube::Error::Api(s)) if s.code == 410 && token.is_some() => {
                return Err(Fetch::Expired);
            }
            Err(kube::Error::Api(s)) if s.code == 404 && token.is_none() => {
                return Err(Fetch::NotServed);
            }
            Err(e) if transient(&e) && waited < RETRY_BUDGET => {
                waited += wait;
                retrying(format!(
                    "GET {path} failed: {}; retrying in {}s",
                    super::error::cause(&e),
                    wait.as_secs()
                ));
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(30));
                continue;
            }
            Err(e) => {
                let doing = Doing {
                    verb: "list",
                    kind: Some(kind),
                    namespace: None,
                    server: conn.server(),
                };
                return Err(Fetch::Failed(classify(&e, doing)));
            }
        };
        token = continue_token(&page);
        // Hand the page over without blocking the runtime while the parser catches up.
        let send = tx.clone();
        let sent = tokio::task::spawn_blocking(move || send.send(page.into_bytes()).is_ok())
            .await
            .unwrap_or(false);
        if !sent || token.is_none() {
            // The parser stopped (it says why), or that was the last page.
            return Ok(());
        }
    }
}

/// `metadata.continue` of a List page, read off the envelope before `items` (where API
/// servers write it) without parsing the items.
fn continue_token(page: &str) -> Option<String> {
    let at = find_top_key(page, "metadata")?;
    let rest = page[at..].trim_start().strip_prefix(':')?.trim_start();
    let end = matching_brace(rest)?;
    let meta: Value = serde_json::from_str(&rest[..end]).ok()?;
    meta.get("continue")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_string)
}

/// The length of the JSON object `text` starts with.
fn matching_brace(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    if b.first() != Some(&b'{') {
        return None;
    }
    let (mut depth, mut in_str, mut escaped) = (0u32, false, false);
    for (i, &c) in b.iter().enumerate() {
        if in_str {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// The KubeSchedulerConfigurations kube-system's ConfigMaps hold (where a scheduler
/// deployed as a workload keeps its configuration). A static kube-scheduler reads its
/// file from the node's disk, which the API does not serve.
async fn scheduler_configs(conn: &Connection) -> Result<Vec<FoundConfig>, String> {
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(conn.client.clone(), "kube-system");
    let list = cms
        .list(&ListParams::default().limit(PAGE))
        .await
        .map_err(|e| {
            let doing = Doing {
                verb: "list",
                kind: None,
                namespace: Some("kube-system"),
                server: conn.server(),
            };
            match &e {
                kube::Error::Api(s) if s.code == 403 => {
                    "list configmaps in namespace kube-system: forbidden".to_string()
                }
                _ => classify(&e, doing).to_string(),
            }
        })?;
    let mut found = Vec::new();
    for cm in list.items {
        let name = cm.meta().name.clone().unwrap_or_default();
        for (key, text) in cm.data.unwrap_or_default() {
            if text.contains("kind: KubeSchedulerConfiguration")
                || text.contains("\"kind\": \"KubeSchedulerConfiguration\"")
                || text.contains("\"kind\":\"KubeSchedulerConfiguration\"")
            {
                found.push(FoundConfig {
                    place: format!("ConfigMap kube-system/{name}, key {key}"),
                    text,
                });
            }
        }
    }
    Ok(found)
}

/// The pages as one stream for the dump reader: concatenated List documents.
struct Pages {
    rx: Receiver<Vec<u8>>,
    page: Vec<u8>,
    at: usize,
}

impl Pages {
    fn new(rx: Receiver<Vec<u8>>) -> Pages {
        Pages {
            rx,
            page: Vec::new(),
            at: 0,
        }
    }
}

impl Read for Pages {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(buf.len());
        buf[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Pages {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        while self.at >= self.page.len() {
            match self.rx.recv() {
                Ok(p) => {
                    self.page = p;
                    self.at = 0;
                }
                // The last page was read (or the fetch failed: it says so).
                Err(_) => return Ok(&[]),
            }
        }
        Ok(&self.page[self.at..])
    }

    fn consume(&mut self, n: usize) {
        self.at += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_continue_token_is_read_off_the_envelope() {
        let page = r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":"eyJ2Ijoi\"x}"},"items":[{"metadata":{"continue":"no"}}]}"#;
        assert_eq!(continue_token(page).as_deref(), Some("eyJ2Ijoi\"x}"));
        let last =
            r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[]}"#;
        assert_eq!(continue_token(last), None);
        let empty = r#"{"kind":"PodList","metadata":{"continue":""},"items":[]}"#;
        assert_eq!(continue_token(empty), None);
    }
}
