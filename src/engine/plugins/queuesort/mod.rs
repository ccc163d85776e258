//! PrioritySort: the queue pops higher priority first, then the pod queued earlier.

use crate::framework::plugin::{Plugin, QueueSortPlugin};
use crate::framework::queued::QueuedPodInfo;

pub const NAME: &str = "PrioritySort";

#[derive(Debug, Default)]
pub struct PrioritySort;

impl Plugin for PrioritySort {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_queue_sort(&self) -> Option<&dyn QueueSortPlugin> {
        Some(self)
    }
}

impl QueueSortPlugin for PrioritySort {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        let (pa, pb) = (a.pod_info.priority, b.pod_info.priority);
        pa > pb || (pa == pb && a.timestamp < b.timestamp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::pod;
    use jiff::Timestamp;
    use serde_json::json;

    #[test]
    fn priority_then_time() {
        let hi =
            pod(json!({"metadata": {"name": "hi"}, "spec": {"priority": 10, "containers": []}}));
        let lo = pod(json!({"metadata": {"name": "lo"}, "spec": {"containers": []}}));
        let t0 = Timestamp::from_second(0).unwrap();
        let t1 = Timestamp::from_second(1).unwrap();
        let q = |p, t| QueuedPodInfo::new(p, t);
        assert!(PrioritySort.less(&q(hi.clone(), t1), &q(lo.clone(), t0)));
        assert!(PrioritySort.less(&q(lo.clone(), t0), &q(lo.clone(), t1)));
        assert!(!PrioritySort.less(&q(lo.clone(), t1), &q(lo, t0)));
    }
}
