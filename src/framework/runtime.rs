//! Running plugins: how the framework turns each plugin's status into the extension
//! point's result, with upstream's wrapping of unexpected codes into errors.

use std::sync::Arc;

use super::cycle_state::CycleState;
use super::node_info::NodeInfo;
use super::plugin::{FilterPlugin, Handle, PreFilterResult};
use super::profile::{ExtensionPoint, Framework, PluginEntry};
use super::status::{Code, Status};
use super::types::PodInfo;

/// One PreFilter plugin's effect on the running PreFilter result.
#[derive(Debug, Clone, Default)]
pub struct PreFilterAccumulator {
    pub result: Option<PreFilterResult>,
    pub plugins_with_nodes: Vec<String>,
    pub skipped: Vec<&'static str>,
    /// The last Unschedulable seen (later plugins still run).
    pub unschedulable: Option<Status>,
    /// A final status that ends PreFilter early (UnschedulableAndUnresolvable, Error, or
    /// an empty node intersection).
    pub terminal: Option<Status>,
}

impl PreFilterAccumulator {
    /// Folds in one plugin's answer, as `RunPreFilterPlugins` does.
    pub fn apply(&mut self, name: &'static str, r: Option<PreFilterResult>, s: Status) {
        if s.is_skip() {
            self.skipped.push(name);
            return;
        }
        if !s.is_success() {
            let s = s.with_plugin(name);
            match s.code() {
                Code::UnschedulableAndUnresolvable => self.terminal = Some(s),
                Code::Unschedulable => self.unschedulable = Some(s),
                _ => {
                    self.terminal = Some(
                        Status::error(format!(
                            "running PreFilter plugin {name:?}: {}",
                            s.message()
                        ))
                        .with_plugin(name),
                    )
                }
            }
            return;
        }
        let r = r.unwrap_or_default();
        if !r.all_nodes() && !self.plugins_with_nodes.iter().any(|p| p == name) {
            self.plugins_with_nodes.push(name.to_string());
            self.plugins_with_nodes.sort();
        }
        let merged = match &self.result {
            None => r,
            Some(prev) => prev.merge(Some(&r)),
        };
        if merged.node_names.as_ref().is_some_and(|n| n.is_empty()) {
            let msg = if self.plugins_with_nodes.len() == 1 {
                format!(
                    "node(s) didn't satisfy plugin {}",
                    self.plugins_with_nodes[0]
                )
            } else {
                format!(
                    "node(s) didn't satisfy plugin(s) [{}] simultaneously",
                    self.plugins_with_nodes.join(" ")
                )
            };
            self.terminal = Some(Status::unresolvable(msg));
        }
        self.result = Some(merged);
    }

    /// The status PreFilter ends with.
    pub fn status(&self) -> Status {
        self.terminal
            .clone()
            .or_else(|| self.unschedulable.clone())
            .unwrap_or_default()
    }
}

impl Framework {
    /// Filter plugins in order, stopping at the first that does not succeed.
    pub fn run_filter_plugins(
        &self,
        h: &Handle,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        for (i, e) in self.plugins(ExtensionPoint::Filter).iter().enumerate() {
            if state.is_filter_skipped_at(i) {
                continue;
            }
            let Some(f) = e.plugin.as_filter() else {
                continue;
            };
            let s = f.filter(h, state, pod, node);
            if !s.is_success() {
                return filter_status(e.name, s);
            }
        }
        Status::success()
    }

    /// The Filter plugins PreFilter did not skip, in order, ready to call per node.
    pub fn active_filters(&self, state: &CycleState) -> Vec<(&'static str, &dyn FilterPlugin)> {
        self.plugins(ExtensionPoint::Filter)
            .iter()
            .enumerate()
            .filter(|(i, _)| !state.is_filter_skipped_at(*i))
            .filter_map(|(_, e)| Some((e.name, e.plugin.as_filter()?)))
            .collect()
    }

    /// One Filter plugin; Success when PreFilter asked to skip it.
    pub fn run_one_filter(
        &self,
        e: &PluginEntry,
        h: &Handle,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        if state.is_filter_skipped(e.name) {
            return Status::success();
        }
        let Some(f) = e.plugin.as_filter() else {
            return Status::success();
        };
        filter_status(e.name, f.filter(h, state, pod, node))
    }

    /// A copy of the state and node with the nominated pods of at least the pod's
    /// priority added, or `None` when there are none (`addGENominatedPods`).
    pub fn add_nominated_pods(
        &self,
        h: &Handle,
        pod: &PodInfo,
        state: &CycleState,
        node: &NodeInfo,
    ) -> Result<Option<(CycleState, NodeInfo)>, Status> {
        if h.nominator.is_empty() {
            return Ok(None);
        }
        let nominated = h.nominator.nominated_pods_for_node(node.name());
        if nominated.is_empty() {
            return Ok(None);
        }
        let mut state_out = state.clone();
        let mut node_out = node.clone();
        let mut added = false;
        for pi in nominated {
            if pi.priority >= pod.priority && pi.uid != pod.uid {
                node_out.add_pod(pi.clone());
                let s =
                    self.run_pre_filter_extension_add_pod(h, &mut state_out, pod, pi, &node_out);
                if !s.is_success() {
                    return Err(s);
                }
                added = true;
            }
        }
        Ok(added.then_some((state_out, node_out)))
    }

    /// Filters with nominated pods considered: once with them (if any) and, if that
    /// passes, once more without (`RunFilterPluginsWithNominatedPods`).
    pub fn run_filter_plugins_with_nominated_pods(
        &self,
        h: &Handle,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        match self.add_nominated_pods(h, pod, state, node) {
            Err(s) => Status::error(s.message()),
            Ok(None) => self.run_filter_plugins(h, state, pod, node),
            Ok(Some((state_with, node_with))) => {
                let s = self.run_filter_plugins(h, &state_with, pod, &node_with);
                if !s.is_success() {
                    return s;
                }
                self.run_filter_plugins(h, state, pod, node)
            }
        }
    }

    pub fn run_pre_filter_extension_add_pod(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        added: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status {
        for e in self.plugins(ExtensionPoint::PreFilter) {
            if state.is_filter_skipped(e.name) {
                continue;
            }
            let Some(ext) = e.plugin.as_pre_filter().and_then(|p| p.extensions()) else {
                continue;
            };
            let s = ext.add_pod(h, state, pod, added, node);
            if !s.is_success() {
                return Status::error(format!(
                    "running AddPod on PreFilter plugin {:?}: {}",
                    e.name,
                    s.message()
                ));
            }
        }
        Status::success()
    }

    pub fn run_pre_filter_extension_remove_pod(
        &self,
        h: &Handle,
        state: &mut CycleState,
        pod: &PodInfo,
        removed: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status {
        for e in self.plugins(ExtensionPoint::PreFilter) {
            if state.is_filter_skipped(e.name) {
                continue;
            }
            let Some(ext) = e.plugin.as_pre_filter().and_then(|p| p.extensions()) else {
                continue;
            };
            let s = ext.remove_pod(h, state, pod, removed, node);
            if !s.is_success() {
                return Status::error(format!(
                    "running RemovePod on PreFilter plugin {:?}: {}",
                    e.name,
                    s.message()
                ));
            }
        }
        Status::success()
    }
}

/// Upstream turns any non-rejecting failure of a Filter plugin into an Error.
pub fn filter_status(name: &'static str, s: Status) -> Status {
    if s.is_success() {
        return s;
    }
    if s.is_rejected() {
        return s.with_plugin(name);
    }
    Status::error(format!("running {name:?} filter plugin: {}", s.message())).with_plugin(name)
}

/// Runs a prepared list of Filter plugins on one node, stopping at the first failure.
pub fn run_filter_list(
    list: &[(&'static str, &dyn FilterPlugin)],
    h: &Handle,
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
) -> Status {
    for (name, f) in list {
        let s = f.filter(h, state, pod, node);
        if !s.is_success() {
            return filter_status(name, s);
        }
    }
    Status::success()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn res(names: &[&str]) -> Option<PreFilterResult> {
        Some(PreFilterResult {
            node_names: Some(names.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>()),
        })
    }

    #[test]
    fn prefilter_accumulates_like_upstream() {
        let mut acc = PreFilterAccumulator::default();
        acc.apply("A", None, Status::skip());
        acc.apply("B", res(&["n1", "n2"]), Status::success());
        acc.apply("C", None, Status::unschedulable("nope"));
        acc.apply("D", None, Status::success());
        assert_eq!(acc.skipped, ["A"]);
        assert_eq!(acc.status().code(), Code::Unschedulable);
        assert_eq!(acc.status().plugin(), "C");
        acc.apply("E", res(&["n3"]), Status::success());
        assert_eq!(
            acc.status().message(),
            "node(s) didn't satisfy plugin(s) [B E] simultaneously"
        );
        let mut one = PreFilterAccumulator::default();
        one.apply("NodeAffinity", res(&[]), Status::success());
        assert_eq!(
            one.status().message(),
            "node(s) didn't satisfy plugin NodeAffinity"
        );
        let mut err = PreFilterAccumulator::default();
        err.apply("X", None, Status::code_only(Code::Wait));
        assert_eq!(err.status().code(), Code::Error);
    }
}
