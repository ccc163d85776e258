//! Every bundled recording the generator writes: its name, its scenario, and whether the
//! file is gzipped. Shared by the generator and the test that the files are up to date.

use crate::k8s::Rec;
use crate::{dra, large, scenarios};

pub struct Entry {
    pub name: &'static str,
    pub build: fn() -> Rec,
    pub gz: bool,
}

type Scenario = (&'static str, fn() -> Rec);

pub fn all() -> Vec<Entry> {
    let small: [Scenario; 10] = [
        ("demo", scenarios::demo),
        ("taints-affinity", scenarios::taints_affinity),
        ("insufficient-resources", scenarios::insufficient_resources),
        ("preemption", scenarios::preemption),
        ("topology-spread", scenarios::topology_spread),
        ("gang-scheduling", scenarios::gang_scheduling),
        ("manual-approval", scenarios::manual_approval),
        ("volumes-zones", scenarios::volumes_zones),
        ("divergence", scenarios::divergence),
        ("dra-gpus", dra::dra_gpus),
    ];
    let mut out: Vec<Entry> = small
        .into_iter()
        .map(|(name, build)| Entry {
            name,
            build,
            gz: false,
        })
        .collect();
    out.push(Entry {
        name: "large",
        build: large::large,
        gz: true,
    });
    out
}

impl Entry {
    pub fn file_name(&self) -> String {
        if self.gz {
            format!("{}.jsonl.gz", self.name)
        } else {
            format!("{}.jsonl", self.name)
        }
    }
}
