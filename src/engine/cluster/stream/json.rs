//! Splits a JSON stream into documents without parsing them: the elements of a List's
//! `items` (or of a top-level array) each become one piece of text, with the line and
//! column it starts on. Only brackets and strings are tracked, so a 2 GB dump is split at
//! memory speed and never held whole; each piece is parsed on its own, in parallel.

use std::io::BufRead;

use super::json_blocks::{self, Cursor, Stop};
use super::{Piece, Sink, SplitError, check_size};
use crate::cluster::object::sniff_top_string;

const READ_CHUNK: usize = 8 << 20;

/// Where the scanner is, across reads.
#[derive(Default)]
struct State {
    depth: u32,
    in_str: bool,
    /// The previous byte was a backslash inside a string.
    escaped: bool,
    /// Line (1-based) of the scan position, and the absolute offset just past its last
    /// newline (for columns).
    line: usize,
    line_start: u64,
    /// Absolute offset of `window[0]`.
    base: u64,
    /// The top-level value is an object (its `items` may be a List's).
    top_object: bool,
    /// Depth of the array whose elements are documents: 1 for a top-level array, 2 for a
    /// List's `items`.
    items_depth: Option<u32>,
    /// The current document, while inside one: its window offset, line and column.
    doc: Option<(usize, usize, usize)>,
    /// Inside the top-level object: the next string at depth 1 is a key.
    expect_key: bool,
    key_start: Option<usize>,
    last_key_is_items: bool,
    /// The top-level object's text less its `items` elements, and where in the window the
    /// part not yet copied starts.
    shell: Vec<u8>,
    shell_from: Option<usize>,
    shell_line: usize,
    had_items: bool,
}

pub(super) fn split(mut input: impl BufRead, sink: &mut Sink) -> Result<(), SplitError> {
    let mut st = State {
        line: 1,
        ..State::default()
    };
    let mut window: Vec<u8> = Vec::with_capacity(READ_CHUNK + (1 << 20));
    let mut scanned = 0usize;
    loop {
        let buf = input
            .fill_buf()
            .map_err(|e| SplitError::Io(e.to_string()))?;
        if buf.is_empty() {
            break;
        }
        let n = buf.len().min(READ_CHUNK);
        window.extend_from_slice(&buf[..n]);
        input.consume(n);
        scan(&mut st, &window, scanned, sink)?;
        // Keep only what an unfinished document or key still needs.
        if let Some(from) = st.shell_from {
            st.shell.extend_from_slice(&window[from..]);
            st.shell_from = Some(window.len());
        }
        // An unfinished item or document holds no more than the limit and one read.
        if let Some((d, line, _)) = st.doc {
            check_size(window.len() - d, line, "item")?;
        }
        if st.top_object {
            check_size(st.shell.len(), st.shell_line, "document")?;
        }
        let keep = match (st.doc, st.key_start) {
            (Some((d, ..)), Some(k)) => d.min(k),
            (Some((d, ..)), None) => d,
            (None, Some(k)) => k,
            (None, None) => window.len(),
        };
        window.drain(..keep);
        st.base += keep as u64;
        scanned = window.len();
        if let Some((d, _, _)) = st.doc.as_mut() {
            *d -= keep;
        }
        if let Some(k) = st.key_start.as_mut() {
            *k -= keep;
        }
        if let Some(s) = st.shell_from.as_mut() {
            *s -= keep;
        }
    }
    if st.depth > 0 || st.in_str {
        let (line, what) = match st.doc {
            Some((_, l, _)) => (l, "the object starting here is not closed"),
            None => (st.line, "unexpected end of input"),
        };
        return Err(SplitError::Syntax {
            line,
            message: format!("{what} (the file ends inside it)"),
        });
    }
    Ok(())
}

fn column(st: &State, at: usize) -> usize {
    (st.base + at as u64 - st.line_start) as usize + 1
}

fn scan(st: &mut State, w: &[u8], from: usize, sink: &mut Sink) -> Result<(), SplitError> {
    let mut i = from;
    // Bytes before this go byte by byte (a block with a backslash, a short tail).
    let mut bytewise_until = 0;
    while i < w.len() {
        if i >= bytewise_until
            && !st.escaped
            && st.doc.is_some()
            && let Some(end_depth) = st.items_depth.filter(|&d| st.depth > d)
        {
            let mut c = Cursor {
                depth: &mut st.depth,
                in_str: &mut st.in_str,
                line: &mut st.line,
                line_start: &mut st.line_start,
                base: st.base,
                end_depth,
            };
            i = match json_blocks::skip(&mut c, w, i) {
                Stop::DocEnd(at) => at,
                Stop::Backslash(at) => {
                    bytewise_until = at + 64;
                    at
                }
                Stop::Short(at) => {
                    bytewise_until = w.len();
                    at
                }
            };
            if i >= w.len() {
                break;
            }
        }
        if st.in_str {
            if st.escaped {
                st.escaped = false;
                i += 1;
                continue;
            }
            match memchr::memchr3(b'"', b'\\', b'\n', &w[i..]) {
                None => return Ok(()),
                Some(k) => {
                    i += k;
                    match w[i] {
                        b'\\' => st.escaped = true,
                        b'\n' => {
                            st.line += 1;
                            st.line_start = st.base + i as u64 + 1;
                        }
                        _ => {
                            st.in_str = false;
                            if let Some(k) = st.key_start.take() {
                                st.last_key_is_items = &w[k..i] == b"items";
                            }
                        }
                    }
                    i += 1;
                    continue;
                }
            }
        }
        let b = w[i];
        match b {
            b'\n' => {
                st.line += 1;
                st.line_start = st.base + i as u64 + 1;
            }
            b' ' | b'\t' | b'\r' => {}
            b'"' => {
                at_value_start(st, w, i)?;
                st.in_str = true;
                if st.top_object && st.depth == 1 && st.expect_key {
                    st.key_start = Some(i + 1);
                    st.expect_key = false;
                }
            }
            b'{' | b'[' => {
                if st.depth == 0 {
                    st.top_object = b == b'{';
                    if st.top_object {
                        st.shell_from = Some(i);
                        st.shell_line = st.line;
                        st.expect_key = true;
                    } else {
                        st.items_depth = Some(1);
                    }
                } else if st.items_depth == Some(st.depth) {
                    st.doc = Some((i, st.line, column(st, i)));
                } else if st.top_object && st.depth == 1 && b == b'[' && st.last_key_is_items {
                    // A List's items: the shell keeps `[]`, the elements go one by one.
                    if let Some(s) = st.shell_from.take() {
                        st.shell.extend_from_slice(&w[s..=i]);
                    }
                    st.items_depth = Some(2);
                    st.had_items = true;
                    // The envelope so far names the List's kind (API servers write
                    // kind and apiVersion first): its items may leave theirs out.
                    let head = String::from_utf8_lossy(&st.shell);
                    sink.list_started(
                        sniff_top_string(&head, "kind"),
                        sniff_top_string(&head, "apiVersion"),
                    );
                }
                st.depth += 1;
            }
            b'}' | b']' => {
                if st.depth == 0 {
                    return Err(unexpected(st, i, b));
                }
                st.depth -= 1;
                if st.items_depth == Some(st.depth) {
                    if let Some((start, line, col)) = st.doc.take() {
                        check_size(i + 1 - start, line, "item")?;
                        sink.push(Piece {
                            text: &w[start..=i],
                            line,
                            column: col,
                        })?;
                    }
                } else if st.items_depth == Some(st.depth + 1) {
                    // The array of documents closed.
                    st.items_depth = None;
                    if st.top_object {
                        st.shell_from = Some(i);
                    }
                }
                if st.depth == 0 && st.top_object {
                    sink.list_started(None, None);
                    if let Some(s) = st.shell_from.take() {
                        st.shell.extend_from_slice(&w[s..=i]);
                    }
                    let shell = std::mem::take(&mut st.shell);
                    let had_items = std::mem::take(&mut st.had_items);
                    sink.shell(&shell, st.shell_line, had_items)?;
                    st.top_object = false;
                    st.last_key_is_items = false;
                }
            }
            b',' => {
                if st.top_object && st.depth == 1 {
                    st.expect_key = true;
                }
            }
            b':' => {}
            _ => at_value_start(st, w, i)?,
        }
        i += 1;
    }
    Ok(())
}

/// A scalar or string where a document should start is not one.
fn at_value_start(st: &State, w: &[u8], i: usize) -> Result<(), SplitError> {
    if st.depth == 0 || st.items_depth == Some(st.depth) {
        return Err(unexpected(st, i, w[i]));
    }
    Ok(())
}

fn unexpected(st: &State, i: usize, b: u8) -> SplitError {
    let message = if st.depth == 0 {
        format!("column {}: expected value", column(st, i))
    } else {
        format!(
            "column {}: expected an object (a list item), found {:?}",
            column(st, i),
            b as char
        )
    };
    SplitError::Syntax {
        line: st.line,
        message,
    }
}
