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

#[cfg(test)]
mod tests {
    use super::*;

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
