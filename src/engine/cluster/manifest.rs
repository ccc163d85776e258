//! Reading Kubernetes objects from manifests: multi-document YAML, JSON, or a `List` as
//! `kubectl get -o yaml|json` prints it. Every error names the file, the line (the
//! field's own, and its column, when the error names a field written in the file; else
//! where the document starts), the object and the field.

use std::path::Path;

use serde_json::Value;

use super::object::{Object, ObjectError, from_value};

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("{file}: cannot read the manifest: {error}")]
    Io { file: String, error: std::io::Error },
    #[error("{file}:{line}: {message}")]
    Syntax {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{file}:{line}{}: {error}", column_suffix(*.column))]
    Object {
        file: String,
        line: usize,
        /// 0 when not known.
        column: usize,
        error: Box<ObjectError>,
    },
}

/// `:COLUMN` after the line (as the scheduler configuration's errors and compilers write
/// it), or nothing for an unknown column.
fn column_suffix(column: usize) -> String {
    if column == 0 {
        String::new()
    } else {
        format!(":{column}")
    }
}

/// Where a document's text lies in its file, for pointing an object's error at its field.
#[derive(Clone, Copy)]
pub(super) struct DocAt<'a> {
    pub file: &'a str,
    pub text: &'a str,
    /// The file's line and column of the text's first character.
    pub line: usize,
    pub column: usize,
    /// Every line of the text starts `column - 1` characters into the file's line (a YAML
    /// List item, cut out and dedented), not only the first (JSON).
    pub every_line_shifted: bool,
}

impl DocAt<'_> {
    /// `error` located: at its field's line and column when the text has the field (or
    /// what encloses it); else at the document's start. `prefix` is the path of the
    /// object within the text (`items[3].` for a List's item).
    pub(super) fn object_error(&self, error: ObjectError, prefix: &str) -> ManifestError {
        let path = format!("{prefix}{}", error.field);
        let path = path.trim_end_matches('.');
        let (line, column) = match super::locate::field_position(self.text, path) {
            Some(p) => {
                let (l, c) = (p.line as usize, p.column as usize);
                let shift = if l == 1 || self.every_line_shifted {
                    self.column.saturating_sub(1)
                } else {
                    0
                };
                (self.line + l - 1, c + shift)
            }
            None => (self.line, 0),
        };
        ManifestError::Object {
            file: self.file.to_string(),
            line,
            column,
            error: Box::new(error),
        }
    }
}

/// A parsed object and where it came from.
#[derive(Debug, Clone)]
pub struct Located<T> {
    pub value: T,
    pub file: String,
    pub line: usize,
}

/// What loading found besides objects: kinds skipped, and the like.
#[derive(Debug, Clone, Default)]
pub struct Notes(pub Vec<String>);

/// Reads a manifest file (gzip or not) as written: objects are not packed or slimmed.
pub fn load_file(path: &Path) -> Result<(Vec<Located<Object>>, Notes), ManifestError> {
    let name = path.display().to_string();
    let input = super::stream::open(&name)?;
    super::stream::load(input, &name, false)
}

/// Parses manifest text (YAML or JSON) named `file` in messages.
pub fn parse_str(text: &str, file: &str) -> Result<(Vec<Located<Object>>, Notes), ManifestError> {
    super::stream::load(text.as_bytes(), file, false)
}

/// Large clusters are fine; alias bombs and runaway nesting are not.
pub(super) fn yaml_options() -> serde_saphyr::Options {
    let mut opts = serde_saphyr::Options::default();
    let mut budget = serde_saphyr::Budget::default();
    budget.max_reader_input_bytes = None;
    budget.max_events = 500_000_000;
    budget.max_nodes = 500_000_000;
    budget.max_total_scalar_bytes = 1 << 30;
    budget.max_depth = 200;
    opts.budget = Some(budget);
    opts
}

pub(super) fn yaml_error(e: &serde_saphyr::Error, chunk_start: usize) -> (usize, String) {
    let msg = e.to_string();
    // saphyr reports "line N column M" relative to the chunk; shift it to the file.
    let rel = e.location().map(|l| l.line() as usize).unwrap_or(1);
    let first_line = msg.lines().next().unwrap_or(&msg).to_string();
    (chunk_start + rel.saturating_sub(1), first_line)
}

/// The objects of one document (a List's items one by one); `prefix` is the document's
/// path within `at.text` (empty at the top).
pub(super) fn collect(
    v: Value,
    at: &DocAt,
    prefix: &str,
    out: &mut Vec<Located<Object>>,
    notes: &mut Notes,
) -> Result<(), ManifestError> {
    let (file, line) = (at.file, at.line);
    let kind = v
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if kind == "List" || (kind.ends_with("List") && v.get("items").is_some()) {
        let items = match v {
            Value::Object(mut m) => m.remove("items").unwrap_or(Value::Null),
            _ => Value::Null,
        };
        for (i, item) in items
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .enumerate()
        {
            collect(item, at, &format!("{prefix}items[{i}]."), out, notes)?;
        }
        return Ok(());
    }
    match from_value(v) {
        Ok(Some(obj)) => out.push(Located {
            value: obj,
            file: file.to_string(),
            line,
        }),
        Ok(None) => notes.0.push(format!(
            "{file}:{line}: skipped {kind} (kubestep does not use this kind)"
        )),
        Err(error) => return Err(at.object_error(error, prefix)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_documents_and_lines() {
        let text = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n---\n\n---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n";
        let (objs, notes) = parse_str(text, "c.yaml").unwrap();
        assert_eq!(objs.len(), 2);
        assert_eq!(objs[1].line, 13);
        assert_eq!(
            notes.0,
            ["c.yaml:6: skipped ConfigMap (kubestep does not use this kind)"]
        );
    }

    #[test]
    fn list_and_json() {
        let text = r#"{"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}}]}"#;
        let (objs, _) = parse_str(text, "l.json").unwrap();
        assert_eq!(objs.len(), 2);
    }

    #[test]
    fn concatenated_json_documents_keep_their_lines_and_errors_their_column() {
        let node = |n: &str| {
            format!(r#"{{"apiVersion": "v1", "kind": "Node", "metadata": {{"name": "{n}"}}}}"#)
        };
        let text = format!("{}\n\n{}\n", node("a"), node("b"));
        let (objs, _) = parse_str(&text, "n.json").unwrap();
        assert_eq!(objs.iter().map(|o| o.line).collect::<Vec<_>>(), [1, 3]);
        let err = parse_str(&format!("{} xx", node("a")), "n.json").unwrap_err();
        assert_eq!(err.to_string(), "n.json:1: column 65: expected value");
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let text = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n---\napiVersion: v1\nkind: Node\nmetadata: [\n";
        let err = parse_str(text, "bad.yaml").unwrap_err().to_string();
        assert!(err.starts_with("bad.yaml:"), "{err}");
        let line: usize = err.split(':').nth(1).unwrap().parse().unwrap();
        assert!(line >= 6, "{err}");
    }

    #[test]
    fn alias_bombs_are_bounded() {
        let mut text = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        let mut prev = 'a';
        for c in 'b'..='z' {
            text.push_str(&format!("{c}: &{c} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"));
            prev = c;
        }
        assert!(parse_str(&text, "bomb.yaml").is_err());
    }
}
