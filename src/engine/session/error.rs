//! What can go wrong when a person (or a script) acts on the session: typed, so a caller can
//! tell which pod, plugin and command it was about without parsing a message.

use thiserror::Error;

/// Allowing or rejecting a pod held at Permit.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PermitError {
    #[error("no pod {pod}")]
    NoSuchPod { pod: String },
    #[error("pod {pod} is not waiting at Permit")]
    NotWaiting { pod: String },
    /// Held inside a PreBind plugin: only the cluster (a driver writing the claim's
    /// device status) or the timeout ends that wait.
    #[error(
        "pod {pod} waits at PreBind, not Permit: {plugin} ends the wait when the cluster shows {what}, or fails it at its timeout; no person allows or rejects it"
    )]
    WaitsAtPreBind {
        pod: String,
        plugin: String,
        what: String,
    },
    #[error("pod {pod} is not waiting on plugin {plugin} (waiting on: {})", .waiting_on.join(", "))]
    NotWaitingOn {
        pod: String,
        plugin: String,
        waiting_on: Vec<String>,
    },
    /// It was waiting when looked up, and its wait ended before the answer arrived.
    #[error("pod {pod} is no longer waiting")]
    NoLongerWaiting { pod: String },
}

impl PermitError {
    /// The pod the error is about.
    pub fn pod(&self) -> &str {
        match self {
            PermitError::NoSuchPod { pod }
            | PermitError::NotWaiting { pod }
            | PermitError::WaitsAtPreBind { pod, .. }
            | PermitError::NotWaitingOn { pod, .. }
            | PermitError::NoLongerWaiting { pod } => pod,
        }
    }
}

/// A script or prompt command that failed; its text is the underlying error's, so scripts
/// read as before, while the command it came from stays available.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CommandError {
    #[error("{error}")]
    Permit {
        /// `allow` or `reject`.
        command: &'static str,
        error: PermitError,
    },
}

impl CommandError {
    /// The command that failed, as written in a script.
    pub fn command(&self) -> &'static str {
        match self {
            CommandError::Permit { command, .. } => command,
        }
    }
}

/// A write to the cluster an [`crate::session::Actuator`] makes for a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOp {
    /// The pods/binding subresource (the detail is the node).
    Bind,
    /// An Event about the pod (the detail is its reason, e.g. FailedScheduling).
    Event,
    /// The pod's status subresource (PodScheduled, nominatedNodeName, DisruptionTarget).
    StatusPatch,
    /// Deleting a preemption victim.
    Delete,
    /// Another object's status written by a plugin (`pod` then names the object as
    /// `Kind namespace/name`): DynamicResources' ResourceClaim allocation.
    ObjectStatus,
    /// Creating an object for a plugin (DynamicResources' extended-resource claim).
    ObjectCreate,
    /// Deleting an object for a plugin (that claim again).
    ObjectDelete,
}

/// A decision the actuator could not carry out: which pod, which write, and what the API
/// server (or the client, when no answer came) said.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ActuatorError {
    /// kubestep never binds a pod twice, whatever its queue does before the watch shows
    /// the first binding.
    #[error("pod {pod} was already bound by kubestep")]
    AlreadyBound { pod: String },
    #[error("{}: {}", describe(*op, pod, detail.as_deref()), said(*code, reason.as_deref(), message))]
    Write {
        op: WriteOp,
        /// `namespace/name`.
        pod: String,
        /// The node of a binding, the reason of an Event.
        detail: Option<String>,
        /// The HTTP status, when the API server answered.
        code: Option<u16>,
        /// The server's reason (`Forbidden`, `Conflict`), when it answered.
        reason: Option<String>,
        /// The server's message, or the client's error.
        message: String,
    },
}

fn describe(op: WriteOp, pod: &str, detail: Option<&str>) -> String {
    let detail = detail.unwrap_or_default();
    match op {
        WriteOp::Bind => format!("binding pod {pod} to {detail}"),
        WriteOp::Event => format!("creating event {detail} for pod {pod}"),
        WriteOp::StatusPatch => format!("patching the status of pod {pod}"),
        WriteOp::Delete => format!("deleting preemption victim {pod}"),
        WriteOp::ObjectStatus => format!("updating the status of {pod}"),
        WriteOp::ObjectCreate => format!("creating {pod}"),
        WriteOp::ObjectDelete => format!("deleting {pod}"),
    }
}

/// The server's words with its status, `"pods is forbidden (403 Forbidden)"`.
fn said(code: Option<u16>, reason: Option<&str>, message: &str) -> String {
    match code {
        Some(c) => format!("{message} ({c} {})", reason.unwrap_or_default()),
        None => message.to_string(),
    }
}

impl ActuatorError {
    /// The pod the write was about.
    pub fn pod(&self) -> &str {
        match self {
            ActuatorError::AlreadyBound { pod } | ActuatorError::Write { pod, .. } => pod,
        }
    }

    /// The HTTP status the API server answered with, if it answered.
    pub fn code(&self) -> Option<u16> {
        match self {
            ActuatorError::Write { code, .. } => *code,
            ActuatorError::AlreadyBound { .. } => None,
        }
    }

    /// What the scheduler reports for the pod (its Bind step, FailedScheduling): a
    /// binding the server refused is "binding rejected: <its message>".
    pub fn scheduler_message(&self) -> String {
        match self {
            ActuatorError::Write {
                op: WriteOp::Bind,
                code: Some(_),
                message,
                ..
            } => format!("binding rejected: {message}"),
            ActuatorError::Write {
                op: WriteOp::Bind,
                message,
                ..
            } => format!("binding failed: {message}"),
            other => other.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_errors_name_the_pod_the_operation_and_the_answer() {
        let e = ActuatorError::Write {
            op: WriteOp::Event,
            pod: "team/huge".into(),
            detail: Some("FailedScheduling".into()),
            code: Some(403),
            reason: Some("Forbidden".into()),
            message: "events is forbidden".into(),
        };
        assert_eq!(
            e.to_string(),
            "creating event FailedScheduling for pod team/huge: events is forbidden (403 Forbidden)"
        );
        assert_eq!(e.pod(), "team/huge");
        assert_eq!(e.code(), Some(403));
        let bind = ActuatorError::Write {
            op: WriteOp::Bind,
            pod: "team/a".into(),
            detail: Some("n1".into()),
            code: Some(409),
            reason: Some("Conflict".into()),
            message: "pod team/a is already assigned to node \"n2\"".into(),
        };
        assert_eq!(
            bind.to_string(),
            "binding pod team/a to n1: pod team/a is already assigned to node \"n2\" (409 Conflict)"
        );
        assert_eq!(
            bind.scheduler_message(),
            "binding rejected: pod team/a is already assigned to node \"n2\""
        );
        let lost = ActuatorError::Write {
            op: WriteOp::Bind,
            pod: "team/a".into(),
            detail: Some("n1".into()),
            code: None,
            reason: None,
            message: "connection reset".into(),
        };
        assert_eq!(lost.scheduler_message(), "binding failed: connection reset");
        assert_eq!(
            ActuatorError::AlreadyBound {
                pod: "team/a".into()
            }
            .to_string(),
            "pod team/a was already bound by kubestep"
        );
    }

    #[test]
    fn messages_name_the_pod_and_plugins() {
        let e = PermitError::NotWaitingOn {
            pod: "ns/p".into(),
            plugin: "A".into(),
            waiting_on: vec!["B".into(), "C".into()],
        };
        assert_eq!(
            e.to_string(),
            "pod ns/p is not waiting on plugin A (waiting on: B, C)"
        );
        assert_eq!(e.pod(), "ns/p");
        let c = CommandError::Permit {
            command: "allow",
            error: e.clone(),
        };
        assert_eq!(c.to_string(), e.to_string());
        assert_eq!(c.command(), "allow");
    }
}
