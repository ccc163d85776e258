//! ImageLocality: prefers nodes that already have the pod's images, weighted by image size
//! and by how widely the image is spread (to avoid piling pods on one node).

use crate::framework::features::Semantics;
use crate::framework::plugin::{Handle, MAX_NODE_SCORE, Plugin, ScorePlugin};
use crate::framework::{CycleState, NodeInfo, PodInfo, Status};

pub const NAME: &str = "ImageLocality";
const MB: i64 = 1024 * 1024;
const MIN_THRESHOLD: i64 = 23 * MB;
const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

/// What differs between versions is which images count: from 1.36 a pod's image volumes
/// join its containers' images in the sum (the threshold still counts containers only);
/// in the 1.37 model they count toward the threshold too. `Default` is v1.35's plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct ImageLocality {
    sums_image_volumes: bool,
    threshold_counts_image_volumes: bool,
}

impl ImageLocality {
    pub fn new(semantics: &Semantics) -> ImageLocality {
        ImageLocality {
            sums_image_volumes: semantics.image_locality_sums_image_volumes,
            threshold_counts_image_volumes: semantics.image_locality_threshold_counts_image_volumes,
        }
    }

    /// The images the pod's image volumes reference, normalized, when this version counts
    /// them (else none): read once per pod and scoring pass, not once per node.
    fn volume_images(&self, pod: &PodInfo) -> Vec<String> {
        if !self.sums_image_volumes && !self.threshold_counts_image_volumes {
            return Vec::new();
        }
        pod.volumes()
            .iter()
            .filter_map(|v| v.image.as_ref())
            .map(|i| normalized_image_name(i.reference.as_deref().unwrap_or("")))
            .collect()
    }

    /// The pod's images as this version scores them.
    fn images<'a>(&self, pod: &'a PodInfo, volumes: &'a [String]) -> PodImages<'a> {
        // 1.37 is modelled, not released: its threshold is taken to count each image
        // volume as one more container.
        let threshold_count = pod.images.len()
            + if self.threshold_counts_image_volumes {
                volumes.len()
            } else {
                0
            };
        PodImages {
            containers: &pod.images,
            volumes: if self.sums_image_volumes {
                volumes
            } else {
                &[]
            },
            threshold_count,
        }
    }
}

/// The images one pod's score sums, and how many containers its threshold counts.
struct PodImages<'a> {
    /// Init containers' then containers' (`PodInfo::images`).
    containers: &'a [String],
    /// The image volumes' references, when they are summed.
    volumes: &'a [String],
    threshold_count: usize,
}

pub use crate::framework::types::normalized_image_name;

fn calculate_priority(sum: i64, num_containers: usize) -> i64 {
    let max_threshold = MAX_CONTAINER_THRESHOLD * num_containers as i64;
    let sum = if sum < MIN_THRESHOLD {
        MIN_THRESHOLD
    } else {
        sum.min(max_threshold)
    };
    if max_threshold == MIN_THRESHOLD {
        return 0;
    }
    MAX_NODE_SCORE * (sum - MIN_THRESHOLD) / (max_threshold - MIN_THRESHOLD)
}

impl Plugin for ImageLocality {
    // Upstream signs the containers' images only; image volumes are in the volumes'
    // signature fragment (VolumeBinding's and the other volume plugins' signers).
    fn sign_pod(&self, pod: &PodInfo) -> Option<crate::framework::signature::SignResult> {
        Some(Ok(vec![crate::plugins::signers::image_names(pod)]))
    }
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

/// The size of the pod's images present on the node, scaled by how many nodes have them.
fn image_score(h: &Handle, pod: &PodImages, node: &NodeInfo) -> i64 {
    let total = h.snapshot.num_nodes();
    let mut sum = 0i64;
    for name in pod.containers.iter().chain(pod.volumes) {
        if let Some(&size) = node.images.get(name.as_str())
            && total > 0
        {
            let spread = h.snapshot.image_num_nodes(name) as f64 / total as f64;
            sum += (size as f64 * spread) as i64;
        }
    }
    calculate_priority(sum, pod.threshold_count)
}

impl ScorePlugin for ImageLocality {
    fn score(
        &self,
        h: &Handle,
        _state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> (i64, Status) {
        let volumes = self.volume_images(pod);
        let images = self.images(pod, &volumes);
        (image_score(h, &images, node), Status::success())
    }

    fn score_nodes(
        &self,
        h: &Handle,
        _state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut [i64],
    ) -> Option<(usize, Status)> {
        let volumes = self.volume_images(pod);
        let images = self.images(pod, &volumes);
        // A node without images (the common case in a snapshot without image states)
        // scores what no matching image gives, computed once.
        let none = calculate_priority(0, images.threshold_count);
        for (node, slot) in nodes.iter().zip(out.iter_mut()) {
            *slot = if node.images.is_empty() {
                none
            } else {
                image_score(h, &images, node)
            };
        }
        None
    }
}

/// Built for the version's semantics (ImageLocality has no args).
pub fn factory(
    ctx: &crate::framework::factory::FactoryContext,
) -> crate::framework::factory::Built {
    Ok(std::sync::Arc::new(ImageLocality::new(
        &ctx.features.semantics,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::{Snapshot, listers::Listers};
    use crate::plugins::testing::{Env, node_obj, pod};
    use serde_json::json;

    #[test]
    fn normalization() {
        assert_eq!(normalized_image_name("nginx"), "nginx:latest");
        assert_eq!(normalized_image_name("nginx:1.25"), "nginx:1.25");
        assert_eq!(
            normalized_image_name("localhost:5000/app"),
            "localhost:5000/app:latest"
        );
        assert_eq!(
            normalized_image_name("reg.io/app@sha256:abc"),
            "reg.io/app@sha256:abc"
        );
    }

    #[test]
    fn scores_spread_weighted_sizes() {
        let with = |name: &str, imgs: serde_json::Value| {
            node_obj(json!({"metadata": {"name": name}, "status": {"images": imgs}}))
        };
        let big = json!([{"names": ["app:1"], "sizeBytes": 500 * MB}]);
        let snap = Snapshot::new(
            vec![with("a", big.clone()), with("b", big), with("c", json!([]))],
            [],
        );
        let env = Env::new(snap, Listers::default());
        let p = pod(
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "app:1"}]}}),
        );
        let score = |n: &str| {
            ImageLocality::default()
                .score(
                    &env.handle(),
                    &CycleState::new(),
                    &p,
                    env.snapshot.get(n).unwrap(),
                )
                .0
        };
        // 500MiB * 2/3 = 333.3MiB; (333.3-23)/(1000-23)*100 = 31
        assert_eq!(score("a"), 31);
        assert_eq!(score("c"), 0);
    }

    /// A pod with one container (app:1) and an image volume (data, i.e. data:latest); a
    /// second volume's image is on no node, and a plain volume is not an image.
    fn image_volume_env() -> (Env, std::sync::Arc<PodInfo>) {
        let with = |name: &str, imgs: serde_json::Value| {
            node_obj(json!({"metadata": {"name": name}, "status": {"images": imgs}}))
        };
        let snap = Snapshot::new(
            vec![
                with(
                    "a",
                    json!([{"names": ["app:1"], "sizeBytes": 500 * MB},
                           {"names": ["data:latest"], "sizeBytes": 600 * MB}]),
                ),
                with("b", json!([{"names": ["app:1"], "sizeBytes": 500 * MB}])),
                with(
                    "c",
                    json!([{"names": ["data:latest"], "sizeBytes": 600 * MB}]),
                ),
            ],
            [],
        );
        let env = Env::new(snap, Listers::default());
        let p = pod(json!({"metadata": {"name": "p"}, "spec": {
            "containers": [{"name": "c", "image": "app:1"}],
            "volumes": [
                {"name": "d", "image": {"reference": "data"}},
                {"name": "m", "image": {"reference": "models:2"}},
                {"name": "e", "emptyDir": {}}]}}));
        (env, p)
    }

    fn scores(pl: &ImageLocality, env: &Env, p: &PodInfo) -> Vec<i64> {
        ["a", "b", "c"]
            .iter()
            .map(|n| {
                pl.score(
                    &env.handle(),
                    &CycleState::new(),
                    p,
                    env.snapshot.get(n).unwrap(),
                )
                .0
            })
            .collect()
    }

    #[test]
    fn image_volumes_count_from_1_36() {
        use crate::framework::features::KubeVersion;
        let (env, p) = image_volume_env();
        let of = |v| ImageLocality::new(&Semantics::of(v));
        // 1.35: the container's image only. a, b: 500MiB * 2/3 = 333.3MiB → 31; c: none.
        assert_eq!(scores(&of(KubeVersion::V1_35), &env, &p), [31, 31, 0]);
        // 1.36: the volume's image adds 600MiB * 2/3 = 400MiB, under a threshold that
        // still counts one container (1000MiB): a = 733.3MiB → 72; c = 400MiB → 38.
        assert_eq!(scores(&of(KubeVersion::V1_36), &env, &p), [72, 31, 38]);
        // 1.37 (modelled): the two image volumes raise the threshold to 3000MiB.
        // a: (733.3-23)/(3000-23) → 23; b: (333.3-23)/2977 → 10; c: (400-23)/2977 → 12.
        assert_eq!(scores(&of(KubeVersion::V1_37), &env, &p), [23, 10, 12]);
        // The batch path agrees with the per-node one, in every version.
        let refs: Vec<&NodeInfo> = env.snapshot.list().iter().collect();
        for v in [KubeVersion::V1_35, KubeVersion::V1_36, KubeVersion::V1_37] {
            crate::plugins::testing::assert_score_nodes_agrees(
                &of(v),
                &env.handle(),
                &CycleState::new(),
                &p,
                &refs,
            );
        }
    }

    #[test]
    fn factory_follows_the_version() {
        use crate::framework::factory::FactoryContext;
        use crate::framework::features::{Features, KubeVersion};
        let (env, p) = image_volume_env();
        for (v, want) in [
            (KubeVersion::V1_35, [31, 31, 0]),
            (KubeVersion::V1_36, [72, 31, 38]),
        ] {
            let features = Features::version(v);
            let ctx = FactoryContext {
                args: None,
                profile_name: "p",
                features: &features,
            };
            let built = factory(&ctx).unwrap();
            let pl = built.as_score().unwrap();
            let got: Vec<i64> = ["a", "b", "c"]
                .iter()
                .map(|n| {
                    pl.score(
                        &env.handle(),
                        &CycleState::new(),
                        &p,
                        env.snapshot.get(n).unwrap(),
                    )
                    .0
                })
                .collect();
            assert_eq!(got, want, "{v}");
        }
    }

    #[test]
    fn batch_scores_match_single_scores() {
        let with = |name: &str, imgs: serde_json::Value| {
            node_obj(json!({"metadata": {"name": name}, "status": {"images": imgs}}))
        };
        let snap = Snapshot::new(
            vec![
                with("a", json!([{"names": ["app:1"], "sizeBytes": 900 * MB}])),
                with("b", json!([])),
                with("c", json!([{"names": ["side:2"], "sizeBytes": 50 * MB}])),
            ],
            [],
        );
        let env = Env::new(snap, Listers::default());
        let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "c", "image": "app:1"}, {"name": "s", "image": "side:2"}]}}));
        let refs: Vec<&NodeInfo> = env.snapshot.list().iter().collect();
        crate::plugins::testing::assert_score_nodes_agrees(
            &ImageLocality::default(),
            &env.handle(),
            &CycleState::new(),
            &p,
            &refs,
        );
    }
}
