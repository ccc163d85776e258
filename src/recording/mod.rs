//! Recordings: a cluster's objects and their changes over time, as JSON Lines (optionally
//! gzip-compressed). The format is documented in docs/recording-format.md. Plain manifests
//! are accepted wherever a recording is, as a snapshot at time zero.

pub mod reader;
pub mod writer;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::cluster::Object;

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

/// One change, at a time, to one object.
#[derive(Debug, Clone)]
pub struct Event {
    pub at: Timestamp,
    pub kind: EventType,
    pub object: Object,
    /// Line of the recording it came from (0 for manifests).
    pub line: usize,
}

/// A loaded recording: header, ordered events, and what was skipped.
#[derive(Debug, Clone)]
pub struct Recording {
    pub header: Header,
    pub events: Vec<Event>,
    pub warnings: Vec<String>,
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
