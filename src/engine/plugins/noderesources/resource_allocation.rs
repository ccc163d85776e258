//! The scoring machinery shared by Fit and BalancedAllocation: for each configured
//! resource, what the node can give and what would be requested with this pod on it,
//! and the strategies that turn that into a score.

use crate::api::pod_resources::{self, CPU, EPHEMERAL_STORAGE, MEMORY, is_scalar_resource_name};
use crate::features::BalancedFormula;
use crate::framework::plugin::MAX_NODE_SCORE;
use crate::framework::{NodeInfo, PodInfo};
pub use crate::plugins::dynamicresources::extended::DeviceTotals;

/// Upstream `config.MaxCustomPriorityScore` and `maxUtilization`.
pub const MAX_CUSTOM_PRIORITY_SCORE: i64 = 10;
const MAX_UTILIZATION: i64 = 100;

pub use crate::config::ResourceSpec;

/// cpu and memory with weight 1, the default everywhere.
pub fn default_resources() -> Vec<ResourceSpec> {
    crate::config::default_resource_spec()
}

pub use crate::plugins::helper::{ShapePoint, broken_linear};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Strategy {
    LeastAllocated,
    MostAllocated,
    RequestedToCapacityRatio(Vec<ShapePoint>),
    /// NodeResourcesBalancedAllocation's standard-deviation score, by the version's formula.
    Balanced(BalancedFormula),
}

/// A configured resource, classified once so scoring does no string work per node.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ResourceKind {
    Cpu,
    Memory,
    EphemeralStorage,
    Scalar { name: String, is_scalar_name: bool },
}

#[derive(Debug, Clone)]
pub struct ResourceAllocationScorer {
    pub resources: Vec<ResourceSpec>,
    kinds: Vec<ResourceKind>,
    pub strategy: Strategy,
    /// Score against what pods request (true), or against requests with the 100m / 200Mi
    /// defaults for containers that name none (false).
    pub use_requested: bool,
    /// DRAExtendedResource: a configured resource a DeviceClass serves counts a node's
    /// devices where the node does not advertise it.
    pub dra_extended: bool,
}

/// Per-resource values for one node; configurations name a handful of resources.
type Values = smallvec::SmallVec<[i64; 4]>;

impl ResourceAllocationScorer {
    pub fn new(
        resources: Vec<ResourceSpec>,
        strategy: Strategy,
        use_requested: bool,
    ) -> ResourceAllocationScorer {
        let kinds = resources
            .iter()
            .map(|r| match r.name.as_str() {
                CPU => ResourceKind::Cpu,
                MEMORY => ResourceKind::Memory,
                EPHEMERAL_STORAGE => ResourceKind::EphemeralStorage,
                n => ResourceKind::Scalar {
                    name: n.to_string(),
                    is_scalar_name: is_scalar_resource_name(n),
                },
            })
            .collect();
        ResourceAllocationScorer {
            resources,
            kinds,
            strategy,
            use_requested,
            dra_extended: false,
        }
    }

    /// The devices serving configured resources, read once per cycle (`None` when the
    /// gate is off or no class serves one).
    pub fn device_totals(
        &self,
        listers: &crate::framework::listers::Listers,
    ) -> Option<std::sync::Arc<DeviceTotals>> {
        // Every pod passes here under 1.36: no allocation unless a configured resource
        // could be served by a class at all.
        let any = self.resources.iter().any(|r| {
            crate::plugins::dynamicresources::extended::is_dra_extended_resource_name(&r.name)
        });
        if !self.dra_extended || !any {
            return None;
        }
        let names: Vec<String> = self.resources.iter().map(|r| r.name.clone()).collect();
        DeviceTotals::of(listers, &names).map(std::sync::Arc::new)
    }

    /// The pod's request of each configured resource (cpu in millicores).
    pub fn pod_requests(&self, pod: &PodInfo) -> Vec<i64> {
        // What the PodInfo already summed covers every resource kind but unusual names.
        let summed = &pod.resource.resource;
        if self.use_requested {
            let fast: Option<Vec<i64>> = self
                .kinds
                .iter()
                .map(|k| match k {
                    ResourceKind::Cpu => Some(summed.milli_cpu),
                    ResourceKind::Memory => Some(summed.memory),
                    ResourceKind::EphemeralStorage => Some(summed.ephemeral_storage),
                    ResourceKind::Scalar {
                        name,
                        is_scalar_name: true,
                    } => Some(summed.scalar(name)),
                    ResourceKind::Scalar { .. } => None,
                })
                .collect();
            if let Some(v) = fast {
                return v;
            }
        }
        let reqs = if self.use_requested {
            pod_resources::pod_requests(pod.pod(), None)
        } else {
            let nm = pod_resources::non_missing_container_requests(&Default::default(), false);
            pod_resources::pod_requests(pod.pod(), Some(&nm))
        };
        self.resources
            .iter()
            .map(|r| match reqs.get(&r.name) {
                Some(q) if r.name == CPU => q.milli_value(),
                Some(q) => q.value(),
                None => 0,
            })
            .collect()
    }

    /// (allocatable, requested-with-pod) for one resource; (0, 0) leaves it out.
    fn allocatable_and_requested(
        &self,
        node: &NodeInfo,
        (i, kind): (usize, &ResourceKind),
        pod_request: i64,
        dra: Option<&DeviceTotals>,
    ) -> (i64, i64) {
        let requested = if self.use_requested {
            &node.requested
        } else {
            &node.non_zero_requested
        };
        match kind {
            ResourceKind::Cpu => (
                node.allocatable.milli_cpu,
                requested.milli_cpu + pod_request,
            ),
            ResourceKind::Memory => (node.allocatable.memory, requested.memory + pod_request),
            ResourceKind::EphemeralStorage => (
                node.allocatable.ephemeral_storage,
                node.requested.ephemeral_storage + pod_request,
            ),
            ResourceKind::Scalar {
                name,
                is_scalar_name,
            } => {
                if pod_request == 0 && *is_scalar_name {
                    return (0, 0);
                }
                let have = node.allocatable.scalar_resources.get(name);
                // DRAExtendedResource: the node's devices of the class serving it.
                if have.copied().unwrap_or(0) == 0
                    && let Some((total, held)) = dra.and_then(|d| d.on_node(i, node.node()))
                    && total > 0
                {
                    return (total, held + pod_request);
                }
                match have {
                    Some(&alloc) => (alloc, node.requested.scalar(name) + pod_request),
                    None => (0, 0),
                }
            }
        }
    }

    /// `score` for each node into `out` (the batch form both plugins use).
    pub fn score_all(
        &self,
        nodes: &[&NodeInfo],
        pod_requests: &[i64],
        dra: Option<&DeviceTotals>,
        out: &mut [i64],
    ) {
        for (node, slot) in nodes.iter().zip(out.iter_mut()) {
            *slot = self.score(node, pod_requests, dra);
        }
    }

    /// `dra`: the devices serving configured resources (DRAExtendedResource), when any.
    pub fn score(&self, node: &NodeInfo, pod_requests: &[i64], dra: Option<&DeviceTotals>) -> i64 {
        // Each resource the node has (allocatable > 0) as (index, requested, allocatable).
        let resources = self.kinds.iter().enumerate().filter_map(|(i, kind)| {
            let (alloc, req) =
                self.allocatable_and_requested(node, (i, kind), pod_requests[i], dra);
            (alloc != 0).then_some((i, req, alloc))
        });
        match &self.strategy {
            Strategy::LeastAllocated => self.weighted(resources, least_requested_score),
            Strategy::MostAllocated => self.weighted(resources, most_requested_score),
            Strategy::RequestedToCapacityRatio(shape) => self.ratio(resources, shape),
            Strategy::Balanced(formula) => {
                let mut requested: Values = Values::new();
                let mut allocated: Values = Values::new();
                let mut allocatable: Values = Values::new();
                for (i, req, alloc) in resources {
                    requested.push(req);
                    allocated.push(req - pod_requests[i]);
                    allocatable.push(alloc);
                }
                let with_pod = balanced_resource_score(&requested, &allocatable);
                match formula {
                    BalancedFormula::WithPod => with_pod,
                    BalancedFormula::Improvement => {
                        let without = balanced_resource_score(&allocated, &allocatable);
                        balance_improvement(with_pod, without)
                    }
                }
            }
        }
    }

    fn weighted(
        &self,
        resources: impl Iterator<Item = (usize, i64, i64)>,
        f: fn(i64, i64) -> i64,
    ) -> i64 {
        let (mut score, mut weights) = (0i64, 0i64);
        for (i, requested, allocatable) in resources {
            let w = self.resources[i].weight;
            score += f(requested, allocatable) * w;
            weights += w;
        }
        if weights == 0 { 0 } else { score / weights }
    }

    fn ratio(
        &self,
        resources: impl Iterator<Item = (usize, i64, i64)>,
        shape: &[ShapePoint],
    ) -> i64 {
        let (mut score, mut weights) = (0i64, 0i64);
        for (i, requested, allocatable) in resources {
            let util = if requested > allocatable {
                MAX_UTILIZATION
            } else {
                requested * MAX_UTILIZATION / allocatable
            };
            let s = broken_linear(shape, util);
            // Only resources that score contribute, to the sum and to the weights.
            if s > 0 {
                let w = self.resources[i].weight;
                score += s * w;
                weights += w;
            }
        }
        if weights == 0 {
            0
        } else {
            (score as f64 / weights as f64).round() as i64
        }
    }
}

pub fn least_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    (capacity - requested) * MAX_NODE_SCORE / capacity
}

pub fn most_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 {
        return 0;
    }
    requested.min(capacity) * MAX_NODE_SCORE / capacity
}

/// From 1.36: each balance score lies in [50, 100], so their difference in [-50, 50];
/// centred on 75, a pod that improves the node's balance scores towards 100, one that
/// spoils it towards 50.
pub fn balance_improvement(with_pod: i64, without_pod: i64) -> i64 {
    MAX_NODE_SCORE / 2 + (MAX_NODE_SCORE / 2 + with_pod - without_pod) / 2
}

/// One minus the standard deviation of the requested fractions, times 100, truncated.
pub fn balanced_resource_score(requested: &[i64], allocatable: &[i64]) -> i64 {
    let mut fractions: smallvec::SmallVec<[f64; 4]> = smallvec::SmallVec::new();
    let mut total = 0.0f64;
    for i in 0..requested.len() {
        if allocatable[i] == 0 {
            continue;
        }
        let f = (requested[i] as f64 / allocatable[i] as f64).min(1.0);
        total += f;
        fractions.push(f);
    }
    let std = match fractions.len() {
        0 | 1 => 0.0,
        2 => ((fractions[0] - fractions[1]) / 2.0).abs(),
        n => {
            let mean = total / n as f64;
            let sum: f64 = fractions.iter().map(|f| (f - mean) * (f - mean)).sum();
            (sum / n as f64).sqrt()
        }
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_and_most() {
        assert_eq!(least_requested_score(3000, 4000), 25);
        assert_eq!(least_requested_score(5000, 4000), 0);
        assert_eq!(most_requested_score(5000, 4000), 100);
        assert_eq!(most_requested_score(1000, 3000), 33);
    }

    #[test]
    fn broken_linear_interpolates() {
        let shape = [
            ShapePoint {
                utilization: 0,
                score: 100,
            },
            ShapePoint {
                utilization: 100,
                score: 0,
            },
        ];
        assert_eq!(broken_linear(&shape, 0), 100);
        assert_eq!(broken_linear(&shape, 25), 75);
        assert_eq!(broken_linear(&shape, 100), 0);
        let shape = [
            ShapePoint {
                utilization: 50,
                score: 30,
            },
            ShapePoint {
                utilization: 80,
                score: 90,
            },
        ];
        assert_eq!(broken_linear(&shape, 10), 30);
        assert_eq!(broken_linear(&shape, 60), 50);
        assert_eq!(broken_linear(&shape, 99), 90);
    }

    #[test]
    fn balanced() {
        assert_eq!(balanced_resource_score(&[50, 50], &[100, 100]), 100);
        assert_eq!(balanced_resource_score(&[100, 0], &[100, 100]), 50);
        assert_eq!(balanced_resource_score(&[30, 0], &[100, 0]), 100);
        // three resources use the population standard deviation
        assert_eq!(balanced_resource_score(&[10, 20, 60], &[100, 100, 100]), 78);
    }

    #[test]
    fn balance_improvement_is_centred_on_75() {
        assert_eq!(balance_improvement(90, 90), 75);
        assert_eq!(balance_improvement(100, 50), 100);
        assert_eq!(balance_improvement(50, 100), 50);
        // Go's integer division truncates: 50 + (50 + 83 - 80) / 2 = 50 + 26.
        assert_eq!(balance_improvement(83, 80), 76);
    }

    #[test]
    fn the_1_36_formula_scores_against_the_node_without_the_pod() {
        let node = crate::framework::testing::node(serde_json::json!({
            "metadata": {"name": "n"},
            "status": {"allocatable": {"cpu": "4", "memory": "4Gi"}}
        }));
        let with = ResourceAllocationScorer::new(
            default_resources(),
            Strategy::Balanced(BalancedFormula::WithPod),
            true,
        );
        let improvement = ResourceAllocationScorer::new(
            default_resources(),
            Strategy::Balanced(BalancedFormula::Improvement),
            true,
        );
        // An empty node and a pod of 2 cpu, 0 memory: with the pod the fractions are
        // (0.5, 0): 75; without it (0, 0): 100. 1.36: 50 + (50 + 75 - 100) / 2 = 62.
        let pod = [2000, 0];
        assert_eq!(with.score(&node, &pod, None), 75);
        assert_eq!(improvement.score(&node, &pod, None), 62);
    }
}
