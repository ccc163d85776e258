//! What scheduling decisions do to the cluster: the Actuator a driver supplies.

use super::error::ActuatorError;
use crate::framework::PodInfo;

/// What scheduling decisions do to the cluster. In replay the session applies them to its
/// own copy; in live active mode they become API calls; in shadow mode nothing is written.
pub trait Actuator: Send {
    /// Bind `pod` to `node`. `Ok` means it is bound.
    fn bind(&mut self, pod: &PodInfo, node: &str) -> Result<(), ActuatorError>;
    /// Evict a preemption victim (`Ok` too when it is already gone).
    fn delete(
        &mut self,
        victim: &PodInfo,
        preemptor: &PodInfo,
        node: &str,
    ) -> Result<(), ActuatorError>;
    /// A preemption victim waiting at Permit is stopped in the scheduler's memory, with no
    /// API call but the Preempted event (`note` is its message).
    fn preempted_waiting(&mut self, _victim: &PodInfo, _note: &str) {}
    /// Set (or with `None` clear) `status.nominatedNodeName`. After a failed attempt it
    /// comes just before `failed`, which may write both at once.
    fn nominate(&mut self, pod: &PodInfo, node: Option<&str>) -> Result<(), ActuatorError>;
    /// NominatedNodeNameForExpectation: at the start of the binding cycle, a pod that will
    /// wait at Permit or has PreBind work gets `status.nominatedNodeName` set to the node it
    /// is about to be bound to (a signal for autoscalers). Written only when it differs.
    fn nominate_for_binding(&mut self, _pod: &PodInfo, _node: &str) -> Result<(), ActuatorError> {
        Ok(())
    }
    /// Write an object's status (`object` is the whole object after the write, with
    /// apiVersion and kind): DynamicResources' ResourceClaim allocation and reservation.
    /// What the session applies locally it applies itself, after this.
    fn update_status(&mut self, _object: &serde_json::Value) -> Result<(), ActuatorError> {
        Ok(())
    }
    /// Create an object (DynamicResources' claim for a pod's extended resources), then
    /// write its status as `update_status` does.
    fn create(&mut self, _object: &serde_json::Value) -> Result<(), ActuatorError> {
        Ok(())
    }
    /// Delete an object (that claim again, when the binding fails).
    fn delete_object(&mut self, _object: &serde_json::Value) -> Result<(), ActuatorError> {
        Ok(())
    }
    /// A Normal event about the pod from a plugin (DynamicResources'
    /// BindingConditionsPending as PreBind begins to wait).
    fn pod_event(&mut self, _pod: &PodInfo, _reason: &str, _note: &str) {}
    /// The attempt failed with this message (FailedScheduling event, PodScheduled=False);
    /// `error` when it was not about fit (the condition's reason is then SchedulerError).
    fn failed(&mut self, _pod: &PodInfo, _message: &str, _error: bool) {}
    /// True when the session must apply binds and deletions to its own cluster copy
    /// (replay); false when they come back as watch events (live).
    fn applies_locally(&self) -> bool {
        true
    }
}

/// The default actuator: decisions only change the session's own cluster.
#[derive(Debug, Default)]
pub struct LocalActuator;

impl Actuator for LocalActuator {
    fn bind(&mut self, _pod: &PodInfo, _node: &str) -> Result<(), ActuatorError> {
        Ok(())
    }
    fn delete(&mut self, _v: &PodInfo, _p: &PodInfo, _node: &str) -> Result<(), ActuatorError> {
        Ok(())
    }
    fn nominate(&mut self, _pod: &PodInfo, _node: Option<&str>) -> Result<(), ActuatorError> {
        Ok(())
    }
}
