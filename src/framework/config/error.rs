//! Errors of loading a configuration: each names the file, the line when known and the
//! field, one problem per line.

use std::fmt;

use super::field::FieldError;
use super::node::Pos;

/// Why a configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    // The io error is part of the one line, not a `source` too: `{:#}` would print it twice.
    #[error("{file}: cannot read the scheduler configuration: {error}")]
    Io { file: String, error: std::io::Error },
    /// Not YAML or JSON.
    #[error("{}", located(.file, .pos, .message))]
    Syntax {
        file: String,
        pos: Pos,
        message: String,
    },
    /// Well-formed, but not a configuration we can decode: wrong apiVersion/kind, unknown
    /// or duplicate fields, values of the wrong type.
    #[error("{}", lines(.file, .errors.iter().map(|e| (e.pos, e.message.clone()))))]
    Decode {
        file: String,
        errors: Vec<LocatedMessage>,
    },
    /// Decoded, but invalid (`ValidateKubeSchedulerConfiguration`).
    #[error("{}", lines(.file, .errors.iter().map(|e| (e.pos, e.error.to_string()))))]
    Invalid {
        file: String,
        errors: Vec<LocatedFieldError>,
    },
}

/// A decoding problem and where it is.
#[derive(Clone, Debug, PartialEq)]
pub struct LocatedMessage {
    pub pos: Pos,
    pub message: String,
}

/// A validation error and where the field (or the closest enclosing one) was written.
#[derive(Clone, Debug, PartialEq)]
pub struct LocatedFieldError {
    pub pos: Pos,
    pub error: FieldError,
}

impl ConfigError {
    /// The individual problems, each as one line (without the file prefix).
    pub fn messages(&self) -> Vec<String> {
        match self {
            ConfigError::Io { error, .. } => vec![error.to_string()],
            ConfigError::Syntax { message, .. } => vec![message.clone()],
            ConfigError::Decode { errors, .. } => {
                errors.iter().map(|e| e.message.clone()).collect()
            }
            ConfigError::Invalid { errors, .. } => {
                errors.iter().map(|e| e.error.to_string()).collect()
            }
        }
    }

    /// The validation errors, if this is a validation failure.
    pub fn field_errors(&self) -> Vec<&FieldError> {
        match self {
            ConfigError::Invalid { errors, .. } => errors.iter().map(|e| &e.error).collect(),
            _ => Vec::new(),
        }
    }
}

fn prefix(file: &str, pos: &Pos) -> String {
    if pos.is_known() {
        format!("{file}:{}:{}", pos.line, pos.column)
    } else {
        file.to_string()
    }
}

fn located(file: &str, pos: &Pos, message: &str) -> String {
    format!("{}: {message}", prefix(file, pos))
}

fn lines(file: &str, items: impl Iterator<Item = (Pos, String)>) -> String {
    let mut out = String::new();
    for (i, (pos, msg)) in items.enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&located(file, &pos, &msg));
    }
    out
}

impl fmt::Display for LocatedMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}
