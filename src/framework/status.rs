//! Status: the result of running a plugin, with kube-scheduler's codes and helpers.

use std::borrow::Cow;
use std::fmt;

use serde::Serialize;

/// Status codes, in upstream's order (Success = 0 ... Pending = 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Code {
    Success,
    Error,
    Unschedulable,
    UnschedulableAndUnresolvable,
    Wait,
    Skip,
    Pending,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Success => "Success",
            Code::Error => "Error",
            Code::Unschedulable => "Unschedulable",
            Code::UnschedulableAndUnresolvable => "UnschedulableAndUnresolvable",
            Code::Wait => "Wait",
            Code::Skip => "Skip",
            Code::Pending => "Pending",
        }
    }

    /// Unschedulable, UnschedulableAndUnresolvable and Pending reject a pod.
    pub fn is_rejected(self) -> bool {
        matches!(
            self,
            Code::Unschedulable | Code::UnschedulableAndUnresolvable | Code::Pending
        )
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

pub type Reason = Cow<'static, str>;

/// The outcome of a plugin call. A default `Status` is Success.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Status {
    code: CodeOrSuccess,
    reasons: Vec<Reason>,
    plugin: Option<Cow<'static, str>>,
}

/// Wrapper so that `Status::default()` is Success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CodeOrSuccess(Code);

impl Default for CodeOrSuccess {
    fn default() -> Self {
        CodeOrSuccess(Code::Success)
    }
}

impl Status {
    pub fn success() -> Status {
        Status::default()
    }

    pub fn new(code: Code, reason: impl Into<Reason>) -> Status {
        let r: Reason = reason.into();
        let reasons = if r.is_empty() { Vec::new() } else { vec![r] };
        Status {
            code: CodeOrSuccess(code),
            reasons,
            plugin: None,
        }
    }

    pub fn with_reasons(code: Code, reasons: Vec<Reason>) -> Status {
        Status {
            code: CodeOrSuccess(code),
            reasons,
            plugin: None,
        }
    }

    pub fn code_only(code: Code) -> Status {
        Status {
            code: CodeOrSuccess(code),
            reasons: Vec::new(),
            plugin: None,
        }
    }

    pub fn unschedulable(reason: impl Into<Reason>) -> Status {
        Status::new(Code::Unschedulable, reason)
    }

    pub fn unresolvable(reason: impl Into<Reason>) -> Status {
        Status::new(Code::UnschedulableAndUnresolvable, reason)
    }

    pub fn error(reason: impl Into<Reason>) -> Status {
        Status::new(Code::Error, reason)
    }

    pub fn skip() -> Status {
        Status::code_only(Code::Skip)
    }

    pub fn code(&self) -> Code {
        self.code.0
    }

    pub fn reasons(&self) -> &[Reason] {
        &self.reasons
    }

    pub fn plugin(&self) -> &str {
        self.plugin.as_deref().unwrap_or("")
    }

    pub fn with_plugin(mut self, plugin: impl Into<Cow<'static, str>>) -> Status {
        self.plugin = Some(plugin.into());
        self
    }

    pub fn set_plugin(&mut self, plugin: impl Into<Cow<'static, str>>) {
        self.plugin = Some(plugin.into());
    }

    pub fn is_success(&self) -> bool {
        self.code() == Code::Success
    }

    pub fn is_skip(&self) -> bool {
        self.code() == Code::Skip
    }

    pub fn is_wait(&self) -> bool {
        self.code() == Code::Wait
    }

    pub fn is_rejected(&self) -> bool {
        self.code().is_rejected()
    }

    /// The reasons joined with ", ", as upstream `Message()`.
    pub fn message(&self) -> String {
        self.reasons.join(", ")
    }

    pub fn push_reason(&mut self, r: impl Into<Reason>) {
        self.reasons.push(r.into());
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.plugin().is_empty() {
            write!(f, "{}: {}", self.code(), self.message())
        } else {
            write!(f, "{} ({}): {}", self.code(), self.plugin(), self.message())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_success_and_message_joins() {
        assert!(Status::default().is_success());
        let s = Status::with_reasons(
            Code::Unschedulable,
            vec!["Insufficient cpu".into(), "Insufficient memory".into()],
        );
        assert_eq!(s.message(), "Insufficient cpu, Insufficient memory");
        assert!(s.is_rejected());
        assert!(!Status::error("x").is_rejected());
        assert!(Status::code_only(Code::Pending).is_rejected());
    }
}
