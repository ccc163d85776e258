//! Recordings bundled with kubestep (recordings/ in the source tree, embedded in the
//! binary): `kubestep replay demo` works with no file and no cluster. They are written by
//! `cargo run --example gen_recordings` (see docs/recording-format.md).

use super::reader::{self, ReadError, ReadOptions};
use super::{Counts, Recording};

pub struct Bundled {
    pub name: &'static str,
    /// The file name under recordings/.
    pub file: &'static str,
    bytes: &'static [u8],
}

macro_rules! bundled {
    ($($name:literal => $file:literal),* $(,)?) => {
        &[$(Bundled {
            name: $name,
            file: $file,
            bytes: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../recordings/", $file)),
        }),*]
    };
}

pub const BUNDLED: &[Bundled] = bundled! {
    "demo" => "demo.jsonl",
    "taints-affinity" => "taints-affinity.jsonl",
    "insufficient-resources" => "insufficient-resources.jsonl",
    "preemption" => "preemption.jsonl",
    "topology-spread" => "topology-spread.jsonl",
    "gang-scheduling" => "gang-scheduling.jsonl",
    "manual-approval" => "manual-approval.jsonl",
    "volumes-zones" => "volumes-zones.jsonl",
    "divergence" => "divergence.jsonl",
    "dra-gpus" => "dra-gpus.jsonl",
    "large" => "large.jsonl.gz",
};

pub fn find(name: &str) -> Option<&'static Bundled> {
    BUNDLED.iter().find(|b| b.name == name)
}

pub fn names() -> impl Iterator<Item = &'static str> {
    BUNDLED.iter().map(|b| b.name)
}

impl Bundled {
    pub fn bytes(&self) -> &'static [u8] {
        self.bytes
    }

    pub fn read(&self, opts: ReadOptions) -> Result<Recording, ReadError> {
        reader::read_bytes(self.bytes, self.name, opts)
    }
}

/// One line of `kubestep recordings`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Listing {
    pub name: &'static str,
    pub description: String,
    #[serde(flatten)]
    pub counts: Counts,
}

/// Every bundled recording with its description and size.
pub fn list() -> Result<Vec<Listing>, ReadError> {
    BUNDLED
        .iter()
        .map(|b| {
            let r = b.read(ReadOptions::default())?;
            Ok(Listing {
                name: b.name,
                description: r.header.description.clone().unwrap_or_default(),
                counts: r.counts(),
            })
        })
        .collect()
}
