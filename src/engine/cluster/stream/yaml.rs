//! Splits YAML into documents at `---` lines, and a List's `items` into one piece per
//! item (as `kubectl get -o yaml` prints them: `- ` at the items' indentation), so a large
//! List is parsed item by item, in parallel, and never held whole.

use std::io::BufRead;

use super::{Piece, Sink, SplitError, check_size};

#[derive(Default)]
struct Doc {
    /// The document less its items' elements (all of it when it is not a List).
    shell: Vec<u8>,
    line: usize,
    had_items: bool,
    /// `items:` was the last top-level key: the next `-` line starts the first item.
    after_items_key: bool,
    /// Indentation of the items' `-` markers, while inside them.
    items_indent: Option<usize>,
    item: Vec<u8>,
    item_line: usize,
}

fn is_separator(line: &[u8]) -> bool {
    let l = line.strip_suffix(b"\n").unwrap_or(line);
    let l = l.strip_suffix(b"\r").unwrap_or(l);
    l == b"---" || l.starts_with(b"--- ") || l == b"..."
}

fn indent(line: &[u8]) -> usize {
    line.iter().take_while(|&&b| b == b' ').count()
}

fn is_blank_or_comment(rest: &[u8]) -> bool {
    let t = rest.trim_ascii_start();
    t.is_empty() || t.starts_with(b"#")
}

fn is_item_start(rest: &[u8]) -> bool {
    rest.starts_with(b"- ") || rest.trim_ascii_end() == b"-"
}

/// `items:` alone (perhaps with a comment) at the top level.
fn is_items_key(line: &[u8]) -> bool {
    let Some(rest) = line.strip_prefix(b"items:") else {
        return false;
    };
    is_blank_or_comment(rest)
}

pub(super) fn split(mut input: impl BufRead, sink: &mut Sink) -> Result<(), SplitError> {
    let mut doc = Doc {
        line: 1,
        ..Doc::default()
    };
    let mut line = Vec::new();
    let mut number = 0usize;
    loop {
        line.clear();
        let n = match crate::limits::read_line(&mut input, &mut line, crate::limits::LINE) {
            Ok(n) => n,
            Err(crate::limits::LineError::Io(e)) => return Err(SplitError::Io(e.to_string())),
            Err(crate::limits::LineError::TooLong(limit)) => {
                return Err(SplitError::Syntax {
                    line: number + 1,
                    message: crate::limits::too_long("line", limit),
                });
            }
        };
        if n == 0 {
            break;
        }
        number += 1;
        // What a document or item holds so far stays within the limit too.
        check_size(doc.shell.len(), doc.line, "document")?;
        if doc.items_indent.is_some() {
            check_size(doc.item.len(), doc.item_line, "List item")?;
        }
        if is_separator(&line) {
            finish_doc(&mut doc, sink)?;
            doc = Doc {
                line: number + 1,
                ..Doc::default()
            };
            continue;
        }
        let ind = indent(&line);
        let rest = &line[ind..];
        if doc.after_items_key || doc.items_indent.is_some() {
            if is_blank_or_comment(rest) {
                if doc.items_indent.is_some() {
                    doc.item.extend_from_slice(&line);
                }
                continue;
            }
            let marker = doc.items_indent.unwrap_or(ind);
            if ind == marker && is_item_start(rest) {
                finish_item(&mut doc, sink)?;
                doc.after_items_key = false;
                doc.items_indent = Some(ind);
                doc.item_line = number;
                // The marker becomes spaces, so every line of the item shares one indent.
                doc.item.extend(std::iter::repeat_n(b' ', ind + 1));
                doc.item.extend_from_slice(&rest[1..]);
                continue;
            }
            if doc.items_indent.is_some() && ind > marker {
                doc.item.extend_from_slice(&line);
                continue;
            }
            finish_item(&mut doc, sink)?;
            doc.after_items_key = false;
            doc.items_indent = None;
        }
        if ind == 0 && is_items_key(&line) {
            doc.after_items_key = true;
            doc.had_items = true;
            doc.shell.extend_from_slice(b"items: []\n");
            continue;
        }
        doc.shell.extend_from_slice(&line);
    }
    finish_doc(&mut doc, sink)
}

fn finish_item(doc: &mut Doc, sink: &mut Sink) -> Result<(), SplitError> {
    if doc.item.is_empty() {
        return Ok(());
    }
    check_size(doc.item.len(), doc.item_line, "List item")?;
    let ind = doc.items_indent.unwrap_or(0) + 2;
    let text = dedent(&doc.item, ind);
    doc.item.clear();
    sink.push(Piece {
        text: &text,
        line: doc.item_line,
        column: ind + 1,
    })
}

/// Removes up to `n` leading spaces from every line.
fn dedent(text: &[u8], n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for line in text.split_inclusive(|&b| b == b'\n') {
        let strip = indent(line).min(n);
        out.extend_from_slice(&line[strip..]);
    }
    out
}

fn finish_doc(doc: &mut Doc, sink: &mut Sink) -> Result<(), SplitError> {
    finish_item(doc, sink)?;
    if doc.shell.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    let shell = std::mem::take(&mut doc.shell);
    sink.shell(&shell, doc.line, doc.had_items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dedent_keeps_deeper_lines() {
        assert_eq!(
            dedent(b"  a: 1\n  b:\n    c: 2\n", 2),
            b"a: 1\nb:\n  c: 2\n"
        );
    }

    #[test]
    fn items_key_is_alone_on_its_line() {
        assert!(is_items_key(b"items:\n"));
        assert!(is_items_key(b"items:   # the pods\n"));
        assert!(!is_items_key(b"items: []\n"));
        assert!(!is_items_key(b"itemsx:\n"));
    }
}
