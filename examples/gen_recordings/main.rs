//! Writes the bundled recordings in recordings/ (deterministically: the same source gives
//! the same bytes). Run after changing a scenario, then commit the files:
//!
//!     cargo run --release --example gen_recordings [NAME...]

mod k8s;
mod large;
mod scenarios;

use std::path::Path;

fn main() -> std::io::Result<()> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings");
    let only: Vec<String> = std::env::args().skip(1).collect();
    let want = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    type Scenario = (&'static str, fn() -> k8s::Rec);
    let small: [Scenario; 9] = [
        ("demo", scenarios::demo),
        ("taints-affinity", scenarios::taints_affinity),
        ("insufficient-resources", scenarios::insufficient_resources),
        ("preemption", scenarios::preemption),
        ("topology-spread", scenarios::topology_spread),
        ("gang-scheduling", scenarios::gang_scheduling),
        ("manual-approval", scenarios::manual_approval),
        ("volumes-zones", scenarios::volumes_zones),
        ("divergence", scenarios::divergence),
    ];
    for (name, f) in small {
        if want(name) {
            f().write(&dir, name, false)?;
        }
    }
    if want("large") {
        large::large().write(&dir, "large", true)?;
    }
    Ok(())
}
