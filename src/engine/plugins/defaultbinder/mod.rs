//! DefaultBinder: binds the pod to the chosen node. The binding itself is carried out by
//! whoever drives the framework (applied to the replayed cluster, or POSTed to the API
//! server in live mode); the plugin answers that it handles every pod.

use crate::framework::plugin::{BindPlugin, Handle, Plugin};
use crate::framework::{CycleState, PodInfo, Status};

pub const NAME: &str = "DefaultBinder";

#[derive(Debug, Default)]
pub struct DefaultBinder;

impl Plugin for DefaultBinder {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_bind(&self) -> Option<&dyn BindPlugin> {
        Some(self)
    }
}

impl BindPlugin for DefaultBinder {
    fn bind(&self, _h: &Handle, _state: &mut CycleState, _pod: &PodInfo, _node: &str) -> Status {
        Status::success()
    }
}
