//! ImageLocality: prefers nodes that already have the pod's images, weighted by image size
//! and by how widely the image is spread (to avoid piling pods on one node).

use crate::framework::plugin::{Handle, MAX_NODE_SCORE, Plugin, ScorePlugin};
use crate::framework::{CycleState, NodeInfo, PodInfo, Status};

pub const NAME: &str = "ImageLocality";
const MB: i64 = 1024 * 1024;
const MIN_THRESHOLD: i64 = 23 * MB;
const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

#[derive(Debug, Default)]
pub struct ImageLocality;

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
fn image_score(h: &Handle, pod: &PodInfo, node: &NodeInfo) -> i64 {
    let total = h.snapshot.num_nodes();
    let mut sum = 0i64;
    for name in pod.images.iter() {
        if let Some(&size) = node.images.get(name.as_str())
            && total > 0
        {
            let spread = h.snapshot.image_num_nodes(name) as f64 / total as f64;
            sum += (size as f64 * spread) as i64;
        }
    }
    calculate_priority(sum, pod.images.len())
}

impl ScorePlugin for ImageLocality {
    fn score(
        &self,
        h: &Handle,
        _state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> (i64, Status) {
        (image_score(h, pod, node), Status::success())
    }

    fn score_nodes(
        &self,
        h: &Handle,
        _state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut [i64],
    ) -> Option<(usize, Status)> {
        // A node without images (the common case in a snapshot without image states)
        // scores what no matching image gives, computed once.
        let none = calculate_priority(0, pod.images.len());
        for (node, slot) in nodes.iter().zip(out.iter_mut()) {
            *slot = if node.images.is_empty() {
                none
            } else {
                image_score(h, pod, node)
            };
        }
        None
    }
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
            ImageLocality
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
            &ImageLocality,
            &env.handle(),
            &CycleState::new(),
            &p,
            &refs,
        );
    }
}
