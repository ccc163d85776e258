//! Recordings bundled with kubestep (recordings/ in the source tree, embedded in the
//! binary): `kubestep replay demo` works with no file and no cluster. They are written by
//! `cargo run --example gen_recordings` (see docs/recording-format.md). One is a plain
//! manifest, `example-cluster`, so the README's `explain` examples work from any directory.

use super::reader::{self, ReadError, ReadOptions};
use super::{Counts, Recording};

pub struct Bundled {
    pub name: &'static str,
    /// The file name under recordings/.
    pub file: &'static str,
    /// For a manifest, which has no header to carry one; a recording's is in its header.
    description: Option<&'static str>,
    bytes: &'static [u8],
}

macro_rules! bundled {
    ($($name:literal => $file:literal $(($description:literal))?),* $(,)?) => {
        &[$(Bundled {
            name: $name,
            file: $file,
            description: bundled!(@description $($description)?),
            bytes: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../recordings/", $file)),
        }),*]
    };
    (@description) => { None };
    (@description $d:literal) => { Some($d) };
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
    "example-cluster" => "example-cluster.yaml" (
        "Example cluster (a manifest: a snapshot, no events over time): six EKS-style nodes in three zones and eight pods, three of them pending; the example for `kubestep explain`"
    ),
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

    /// A manifest (a cluster at one instant) rather than a recording over time.
    pub fn is_manifest(&self) -> bool {
        !self.file.ends_with(".jsonl") && !self.file.ends_with(".jsonl.gz")
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
                description: b
                    .description
                    .map(str::to_string)
                    .or_else(|| r.header.description.clone())
                    .unwrap_or_default(),
                counts: r.counts(),
            })
        })
        .collect()
}
