//! Allowing and rejecting pods that wait at Permit, by hand.

use super::*;

impl Session {
    /// Allows a waiting pod: for one plugin, or for every plugin it waits on.
    pub fn allow(&mut self, pod: &str, plugin: Option<&str>) -> Result<(), PermitError> {
        let wp = self.waiting_pod(pod)?;
        let plugins: Vec<String> = match plugin {
            Some(p) => vec![p.to_string()],
            None => wp.pending.keys().cloned().collect(),
        };
        for p in &plugins {
            if !self.core.waiting.allow(&wp.pod.uid, p) {
                return Err(PermitError::NotWaitingOn {
                    pod: pod.to_string(),
                    plugin: p.clone(),
                    waiting_on: wp.pending.keys().cloned().collect(),
                });
            }
        }
        Ok(())
    }

    /// Rejects a waiting pod, with a message (shown as the rejection reason).
    pub fn reject(
        &mut self,
        pod: &str,
        plugin: Option<&str>,
        message: &str,
    ) -> Result<(), PermitError> {
        let wp = self.waiting_pod(pod)?;
        let plugin = plugin
            .map(str::to_string)
            .or_else(|| wp.pending.keys().next().cloned())
            .unwrap_or_default();
        let msg = if message.is_empty() {
            "rejected by the user"
        } else {
            message
        };
        if self.core.waiting.reject(&wp.pod.uid, &plugin, msg) {
            Ok(())
        } else {
            Err(PermitError::NoLongerWaiting {
                pod: pod.to_string(),
            })
        }
    }

    pub(super) fn waiting_pod(
        &self,
        key: &str,
    ) -> Result<crate::framework::waiting::WaitingPod, PermitError> {
        let uid = self
            .core
            .pods
            .get(key)
            .map(|r| r.uid.clone())
            .ok_or_else(|| PermitError::NoSuchPod {
                pod: key.to_string(),
            })?;
        if let Some(h) = self
            .core
            .parked
            .get(&uid)
            .and_then(|a| a.pre_bind_hold.as_ref())
        {
            return Err(PermitError::WaitsAtPreBind {
                pod: key.to_string(),
                plugin: h.plugin.to_string(),
                what: "the devices' binding conditions met".to_string(),
            });
        }
        self.core
            .waiting
            .get(&uid)
            .filter(|w| w.outcome.is_none())
            .ok_or_else(|| PermitError::NotWaiting {
                pod: key.to_string(),
            })
    }
}
