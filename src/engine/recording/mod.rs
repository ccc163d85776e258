//! Recordings: a cluster's objects and their changes over time, as JSON Lines (optionally
//! gzip-compressed). The format is documented in docs/recording-format.md. Plain manifests
//! are accepted wherever a recording is, as a snapshot at time zero.

pub mod bundled;
pub mod reader;
pub mod writer;

use std::collections::BTreeSet;
use std::path::Path;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::cluster::{ClusterState, Object};

pub use reader::{ReadError, ReadOptions};

/// The format version this build writes and the newest it reads.
pub const VERSION: u32 = 1;
pub const MAGIC: &str = "recording";

/// Where a recording came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
    /// Namespaces recorded (`None` for all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<Vec<String>>,
}

/// The first line of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    /// Always "recording".
    pub kubestep: String,
    pub version: u32,
    pub started: Timestamp,
    #[serde(default)]
    pub source: SourceInfo,
    /// The cluster's KubeSchedulerConfiguration, when known (any apiVersion kubestep reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_configuration: Option<serde_json::Value>,
    /// One-line description (bundled recordings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl Header {
    pub fn new(started: Timestamp) -> Header {
        Header {
            kubestep: MAGIC.into(),
            version: VERSION,
            started,
            source: SourceInfo::default(),
            scheduler_configuration: None,
            description: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

/// A time span in which the recorder knows changes are missing: the watches of `kinds`
/// failed from the line's `at` until `until` (the recording's end, when they never came
/// back). A line of its own, `{"at":..,"gap":{..}}`; replay warns about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gap {
    pub until: Timestamp,
    pub kinds: Vec<String>,
    /// Why, in words (the last error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Gap {
    /// The warning a reader gives for a gap that starts at `at`.
    pub fn warning(&self, at: Timestamp) -> String {
        let span = self.until.duration_since(at).as_secs().max(0);
        // To the second: the span is what matters, not the recorder's clock's precision.
        let second = |t: Timestamp| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let mut text = format!(
            "gap in the recording: changes to {} from {} to {} ({span}s) were not recorded",
            self.kinds.join(", "),
            second(at),
            second(self.until)
        );
        if let Some(r) = &self.reason {
            text.push_str(&format!(" ({r})"));
        }
        text.push_str("; from then on the replay may not match the cluster");
        text
    }
}

/// One change, at a time, to one object.
#[derive(Debug, Clone)]
pub struct Event {
    pub at: Timestamp,
    pub kind: EventType,
    /// Boxed to keep an `Event` a few words: the feed's buffer keeps room for every event
    /// it ever held, and `Object` itself is several words even with its large kinds boxed.
    pub object: Box<Object>,
    /// Line of the recording it came from (0 for manifests).
    pub line: usize,
}

/// A loaded recording: header, ordered events, and what was skipped.
#[derive(Debug, Clone)]
pub struct Recording {
    pub header: Header,
    pub events: Vec<Event>,
    /// Problems with the input (bad or truncated lines, gaps): said as warnings.
    pub warnings: Vec<String>,
    /// What loading passed over that is not a problem (a manifest's objects of kinds
    /// kubestep does not use): information.
    pub notes: Vec<String>,
    /// Objects of kinds kubestep does not use, skipped.
    pub skipped: usize,
}

impl Recording {
    pub fn start(&self) -> Timestamp {
        self.header.started
    }

    pub fn end(&self) -> Timestamp {
        self.events
            .last()
            .map_or(self.header.started, |e| e.at.max(self.header.started))
    }
}

/// How big a recording is, for `kubestep recordings`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub nodes: usize,
    pub pods: usize,
    pub events: usize,
}

impl Recording {
    /// Distinct nodes and pods that appear, and the number of events.
    pub fn counts(&self) -> Counts {
        let mut nodes = BTreeSet::new();
        let mut pods = BTreeSet::new();
        for e in &self.events {
            if let Object::Node(_) = &*e.object {
                nodes.insert(e.object.key());
            } else if e.object.pod_node_name().is_some() {
                let uid = e.object.pod_uid().map(str::to_string);
                pods.insert(uid.unwrap_or_else(|| e.object.key()));
            }
        }
        Counts {
            nodes: nodes.len(),
            pods: pods.len(),
            events: self.events.len(),
        }
    }

    /// The cluster as it is once every event up to and including `t` has happened.
    pub fn cluster_at(&self, t: Timestamp) -> ClusterState {
        let mut cs = ClusterState::default();
        for e in self.events.iter().take_while(|e| e.at <= t) {
            apply_to(&mut cs, e);
        }
        cs.resolve_priorities();
        cs
    }
}

/// One event applied to a cluster without a scheduler (loading, `explain`).
pub fn apply_to(cs: &mut ClusterState, e: &Event) {
    match e.kind {
        EventType::Deleted => {
            cs.remove(e.object.kind(), &e.object.key());
        }
        EventType::Added | EventType::Modified => {
            cs.upsert((*e.object).clone());
        }
    }
}

/// Opens a recording (or manifest) by path, or a bundled recording by name; a file that
/// exists wins over a bundled recording of the same name.
pub fn open(source: &str) -> Result<Recording, ReadError> {
    open_with(source, ReadOptions::default())
}

pub fn open_with(source: &str, opts: ReadOptions) -> Result<Recording, ReadError> {
    let path = Path::new(source);
    if path.exists() {
        return reader::read_file(path, opts);
    }
    match bundled::find(source) {
        Some(b) => b.read(opts),
        None => Err(ReadError::NotFound {
            name: source.to_string(),
            bundled: bundled::names().collect::<Vec<_>>().join(", "),
        }),
    }
}

impl Recording {
    /// The scheduler configuration the header carries, decoded and validated as a
    /// `--config` file would be for `features`; `name` (the recording) prefixes its errors.
    /// Its extenders are left out unless `call_extenders` (the user's `--call-extenders`):
    /// files travel between people, and opening one must not make kubestep call the
    /// network (nor read the local TLS files an extender names) on the file's say-so.
    pub fn scheduler_config(
        &self,
        name: &str,
        features: &crate::features::Features,
        call_extenders: bool,
    ) -> Result<Option<crate::config::KubeSchedulerConfiguration>, crate::config::ConfigError> {
        let Some(v) = &self.header.scheduler_configuration else {
            return Ok(None);
        };
        let mut v = v.clone();
        if !call_extenders && let Some(m) = v.as_object_mut() {
            m.remove("extenders");
        }
        // Pretty-printed so that errors can point at a line.
        let text = serde_json::to_string_pretty(&v).unwrap_or_default();
        let source = format!("{name}: header schedulerConfiguration");
        crate::config::parse_str_for(&text, &source, features).map(Some)
    }

    /// What a command says when `scheduler_config` leaves the header's extenders out:
    /// which, and how to call them.
    pub fn withheld_extenders(&self, call_extenders: bool) -> Option<String> {
        if call_extenders {
            return None;
        }
        let urls: Vec<String> = self
            .header
            .scheduler_configuration
            .as_ref()?
            .get("extenders")?
            .as_array()?
            .iter()
            .map(|e| {
                let url = e.get("urlPrefix").and_then(|u| u.as_str()).unwrap_or("?");
                crate::redact::url(url).into_owned()
            })
            .collect();
        if urls.is_empty() {
            return None;
        }
        Some(format!(
            "the recording's scheduler configuration names {} extender(s) ({}): not called, since opening a file never makes kubestep call the network; decisions that depended on them may differ. Pass --call-extenders to call them, or --config with a configuration of your own",
            urls.len(),
            urls.join(", ")
        ))
    }

    /// The Kubernetes version the recording reports: its header's (the server it was
    /// recorded from), else, for a manifest read as a recording, its newest kubelet's.
    pub fn kube_version(&self) -> Option<crate::features::Choice> {
        use crate::features::{Choice, Source};
        if let Some(v) = &self.header.source.kubernetes_version
            && let Some(c) = Choice::reported(v, Source::Recording)
        {
            return Some(c);
        }
        crate::cluster::kubelet_version_of(self.events.iter().filter_map(
            |e| match e.object.as_ref() {
                crate::cluster::Object::Node(n) => Some(n.as_ref()),
                _ => None,
            },
        ))
    }
}
