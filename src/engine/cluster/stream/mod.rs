//! Manifests and dumps read as a stream: a file, gzip or not, or standard input (`-`).
//! A splitter (json.rs, yaml.rs) cuts the text into documents (a List's items one by
//! one) on one thread while the others parse them in batches, so a dump of any size is
//! read at the speed of the cores with memory for a few batches of text, plus what is
//! kept: in a lean load, bound pods packed and every object without what the scheduler
//! never reads (see `Object::slim`).

mod filter;
mod json;
mod json_blocks;
mod yaml;

use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use rayon::prelude::*;
use serde_json::Value;

use super::manifest::{self, Located, ManifestError, Notes};
use super::object::{self, Object};

/// Text is handed to the parsing threads in batches of about this size.
const BATCH_BYTES: usize = 4 << 20;

/// One document's text and where it starts. `column`: in JSON, where the first line
/// starts; in YAML, where every line starts (a List's item is dedented).
pub(super) struct Piece<'a> {
    pub text: &'a [u8],
    pub line: usize,
    pub column: usize,
}

#[derive(Debug)]
pub(super) enum SplitError {
    Io(String),
    Syntax {
        line: usize,
        message: String,
    },
    /// The parsing side stopped (it found an error): nothing more to do.
    Stopped,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Yaml,
}

struct Batch {
    text: Vec<u8>,
    /// (start, end, line, column) of each piece in `text`.
    pieces: Vec<(usize, usize, usize, usize)>,
    /// The kind and apiVersion of the List the pieces are items of, for items without
    /// their own: the API server's typed Lists (`GET /api/v1/pods`, `kubectl get --raw`)
    /// leave them out of each item.
    item_kind: Option<ItemKind>,
}

/// (kind, apiVersion) an item of a typed List has without saying so.
pub(super) type ItemKind = std::sync::Arc<(String, String)>;

/// Collects pieces into batches for the parsing threads.
pub(super) struct Sink {
    batch: Batch,
    tx: SyncSender<Batch>,
    /// Batches parsed, back for their buffers: a fresh 4 MiB buffer per batch is page
    /// faults on every write, and the allocator's returning the old one to the system.
    spare: Receiver<Batch>,
    format: Format,
    /// The kind of a List's items when its envelope does not say before them (the
    /// caller knows: it asked the API server for that kind).
    items_of: Option<ItemKind>,
}

impl Sink {
    /// The items that follow belong to a List of this kind (`PodList` of `v1`): each
    /// without a `kind` of its own is a `Pod` of `v1`. A batch holds one List's items.
    fn list_started(&mut self, list_kind: Option<&str>, api_version: Option<&str>) {
        let kind = list_kind
            .and_then(|k| k.strip_suffix("List"))
            .filter(|k| !k.is_empty())
            .zip(api_version)
            .map(|(k, v)| std::sync::Arc::new((k.to_string(), v.to_string())))
            .or_else(|| list_kind.is_none().then(|| self.items_of.clone()).flatten());
        if kind != self.batch.item_kind {
            // Pieces already batched keep the kind they were split under.
            let _ = self.flush();
            self.batch.item_kind = kind;
        }
    }

    fn push(&mut self, p: Piece) -> Result<(), SplitError> {
        let start = self.batch.text.len();
        self.batch.text.extend_from_slice(p.text);
        self.batch
            .pieces
            .push((start, self.batch.text.len(), p.line, p.column));
        if self.batch.text.len() >= BATCH_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    /// The top-level document less its items: a List's envelope (checked to be one), or
    /// a whole document.
    fn shell(&mut self, text: &[u8], line: usize, had_items: bool) -> Result<(), SplitError> {
        check_size(text.len(), line, "document")?;
        if !had_items {
            return self.push(Piece {
                text,
                line,
                column: 1,
            });
        }
        let v: Value = match self.format {
            Format::Json => serde_json::from_slice(text).map_err(|e| SplitError::Syntax {
                line: line + e.line().saturating_sub(1),
                message: format!("column {}: {}", e.column(), strip_at(&e.to_string())),
            })?,
            Format::Yaml => {
                let text = String::from_utf8_lossy(text);
                serde_saphyr::from_str_with_options(&text, manifest::yaml_options()).map_err(
                    |e| {
                        let (line, message) = manifest::yaml_error(&e, line);
                        SplitError::Syntax { line, message }
                    },
                )?
            }
        };
        let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
        if is_list_kind(kind) {
            return Ok(());
        }
        Err(SplitError::Syntax {
            line,
            message: format!(
                "a top-level object with `items` must be a List (its kind is {})",
                if kind.is_empty() { "missing" } else { kind }
            ),
        })
    }

    fn flush(&mut self) -> Result<(), SplitError> {
        if self.batch.pieces.is_empty() {
            return Ok(());
        }
        let cap = self.batch.text.len() + (64 << 10);
        let next = match self.spare.try_recv() {
            Ok(mut b) => {
                b.text.clear();
                b.pieces.clear();
                b.item_kind = None;
                b
            }
            Err(_) => Batch {
                text: Vec::with_capacity(cap.min(BATCH_BYTES + (1 << 20))),
                pieces: Vec::new(),
                item_kind: None,
            },
        };
        let full = std::mem::replace(&mut self.batch, next);
        self.batch.item_kind = full.item_kind.clone();
        self.tx.send(full).map_err(|_| SplitError::Stopped)
    }
}

/// A document or item of `len` bytes starting at `line` is refused past `limits::LINE`.
/// The splitters check what they hold as it grows, so no more than that (and one read's
/// worth) is ever held of one.
pub(super) fn check_size(len: usize, line: usize, what: &str) -> Result<(), SplitError> {
    let limit = crate::limits::LINE;
    if len <= limit {
        return Ok(());
    }
    Err(SplitError::Syntax {
        line,
        message: crate::limits::too_large(what, limit),
    })
}

pub(super) fn is_list_kind(kind: &str) -> bool {
    kind == "List" || kind.ends_with("List")
}

/// serde_json's text ends "at line L column C": the caller says where, in file terms.
fn strip_at(text: &str) -> &str {
    text.rfind(" at line ").map_or(text, |i| &text[..i])
}

/// Opens a manifest source: `-` is standard input; gzip is recognised by its magic bytes.
pub fn open(source: &str) -> Result<Box<dyn BufRead + Send>, ManifestError> {
    let io = |error| ManifestError::Io {
        file: display_name(source),
        error,
    };
    let raw: Box<dyn Read + Send> = if source == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(source).map_err(io)?)
    };
    let mut r = BufReader::with_capacity(1 << 20, raw);
    let gz = r.fill_buf().map_err(io)?.starts_with(&[0x1f, 0x8b]);
    Ok(if gz {
        Box::new(BufReader::with_capacity(
            1 << 20,
            flate2::bufread::MultiGzDecoder::new(r),
        ))
    } else {
        Box::new(r)
    })
}

/// How a source is named in messages.
pub fn display_name(source: &str) -> String {
    if source == "-" {
        "<stdin>".into()
    } else {
        source.to_string()
    }
}

/// Reads every object of a stream. `lean`: pack bound pods and drop what the scheduler
/// never reads, as the objects are parsed (for large clusters); otherwise objects come
/// back as written.
pub fn load(
    input: impl BufRead + Send,
    file: &str,
    lean: bool,
) -> Result<(Vec<Located<Object>>, Notes), ManifestError> {
    load_items_of(input, file, lean, None)
}

/// `load` of a stream of Lists of one kind, as the API server answers a LIST: items
/// without a kind of their own are `(kind, apiVersion)` when the List's envelope does
/// not name its kind before its items.
pub fn load_items_of(
    mut input: impl BufRead + Send,
    file: &str,
    lean: bool,
    items_of: Option<(&str, &str)>,
) -> Result<(Vec<Located<Object>>, Notes), ManifestError> {
    let items_of = items_of.map(|(k, v)| std::sync::Arc::new((k.to_string(), v.to_string())));
    let syntax = |line, message| ManifestError::Syntax {
        file: file.to_string(),
        line,
        message,
    };
    let io = |e: String| ManifestError::Io {
        file: file.to_string(),
        error: std::io::Error::other(e),
    };
    let head = input.fill_buf().map_err(|e| io(e.to_string()))?;
    let first = head
        .iter()
        .position(|b| !b.is_ascii_whitespace() && *b != 0xEF && *b != 0xBB && *b != 0xBF);
    let format = match first.map(|i| head[i]) {
        Some(b'{') | Some(b'[') => Format::Json,
        _ => Format::Yaml,
    };
    let (tx, rx) = sync_channel::<Batch>(2);
    let (spare_tx, spare_rx) = sync_channel::<Batch>(2);
    let mut objects = Vec::new();
    let mut notes = Notes::default();
    let mut failure: Option<ManifestError> = None;
    let split_result = std::thread::scope(|scope| {
        let splitter = scope.spawn(move || {
            let mut sink = Sink {
                batch: Batch {
                    text: Vec::with_capacity(BATCH_BYTES + (1 << 20)),
                    pieces: Vec::new(),
                    item_kind: None,
                },
                tx,
                spare: spare_rx,
                format,
                items_of,
            };
            let r = match format {
                Format::Json => json::split(input, &mut sink),
                Format::Yaml => yaml::split(input, &mut sink),
            };
            r.and_then(|()| sink.flush())
        });
        for batch in rx.iter() {
            let parsed: Vec<Result<Parsed, ManifestError>> = batch
                .pieces
                .par_iter()
                .map(|&(s, e, line, column)| {
                    let at = PieceAt {
                        format,
                        file,
                        line,
                        column,
                        lean,
                        item_kind: batch.item_kind.as_deref(),
                    };
                    parse_piece(&batch.text[s..e], at)
                })
                .collect();
            for p in parsed {
                match p {
                    Ok(p) => {
                        objects.extend(p.objects);
                        notes.0.extend(p.notes);
                    }
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                }
            }
            if failure.is_some() {
                break;
            }
            // Full or gone: the splitter allocates instead.
            let _ = spare_tx.try_send(batch);
        }
        drop(rx);
        splitter
            .join()
            .unwrap_or_else(|_| Err(SplitError::Io("the reader thread failed".into())))
    });
    if let Some(e) = failure {
        return Err(e);
    }
    match split_result {
        Ok(()) | Err(SplitError::Stopped) => Ok((objects, notes)),
        Err(SplitError::Io(e)) => Err(io(e)),
        Err(SplitError::Syntax { line, message }) => Err(syntax(line, message)),
    }
}

#[derive(Default)]
struct Parsed {
    objects: Vec<Located<Object>>,
    notes: Vec<String>,
}

/// Where a piece is and how to read it.
#[derive(Clone, Copy)]
struct PieceAt<'a> {
    format: Format,
    file: &'a str,
    line: usize,
    column: usize,
    lean: bool,
    item_kind: Option<&'a (String, String)>,
}

fn parse_piece(text: &[u8], at: PieceAt) -> Result<Parsed, ManifestError> {
    let with_kind;
    let text = match at.item_kind {
        Some(kind) if at.format == Format::Json => match with_item_kind(text, kind) {
            Some(t) => {
                with_kind = t;
                &with_kind[..]
            }
            None => text,
        },
        _ => text,
    };
    if at.lean && at.format == Format::Json {
        // Fields the lean load would drop anyway are cut from the text before parsing; a
        // piece that fails is parsed again as written, so errors point where they are.
        // `kind` comes early (kubectl sorts keys; API servers write it first): read it
        // off the head, not the whole text. A kind not found there only means less is
        // dropped before parsing; `lean` still slims the object.
        let head = &text[..text.len().min(4096)];
        let head = std::str::from_utf8(head)
            .unwrap_or_else(|e| std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default());
        let pod = object::sniff_kind(head) == Some("Pod");
        let bound = pod && filter::names_a_node(text);
        let drop = if bound {
            filter::BOUND_POD
        } else {
            filter::ALWAYS
        };
        if let Some(slim) = filter::without_keys(text, drop)
            && let Ok(p) = parse_text(&slim, at)
        {
            // `nodeName` found somewhere else than the spec (a label, say): the pod is
            // pending and keeps what only a bound pod loses.
            let pending = |o: &Located<Object>| matches!(o.value, Object::Pod(_));
            if !(bound && p.objects.iter().any(pending)) {
                return Ok(p);
            }
            if let Some(slim) = filter::without_keys(text, filter::ALWAYS)
                && let Ok(p) = parse_text(&slim, at)
            {
                return Ok(p);
            }
        }
    }
    parse_text(text, at)
}

/// An item of a typed List without its own `kind`: the text with the List's kind and
/// apiVersion put first, as kubectl writes items. `None`: the item says its kind.
fn with_item_kind(text: &[u8], (kind, api_version): &(String, String)) -> Option<Vec<u8>> {
    let s = std::str::from_utf8(text).ok()?;
    if object::find_top_key(s, "kind").is_some() {
        return None;
    }
    let body = s.trim_start().strip_prefix('{')?;
    let comma = if body.trim_start().starts_with('}') {
        ""
    } else {
        ","
    };
    let head = serde_json::json!({"kind": kind, "apiVersion": api_version}).to_string();
    let mut out = Vec::with_capacity(text.len() + head.len() + 1);
    out.extend_from_slice(&head.as_bytes()[..head.len() - 1]);
    out.extend_from_slice(comma.as_bytes());
    out.extend_from_slice(body.as_bytes());
    Some(out)
}

fn parse_text(text: &[u8], at: PieceAt) -> Result<Parsed, ManifestError> {
    let PieceAt {
        format,
        file,
        line,
        column,
        lean,
        item_kind: _,
    } = at;
    let syntax = |line, message| ManifestError::Syntax {
        file: file.to_string(),
        line,
        message,
    };
    let text = match std::str::from_utf8(text) {
        Ok(t) => t,
        Err(e) => {
            let at = &text[..e.valid_up_to()];
            let l = line + at.iter().filter(|&&b| b == b'\n').count();
            return Err(syntax(l, "invalid UTF-8".into()));
        }
    };
    let mut out = Parsed::default();
    let mut notes = Notes::default();
    let doc = manifest::DocAt {
        file,
        text,
        line,
        column,
        every_line_shifted: format == Format::Yaml,
    };
    match format {
        Format::Json if !is_list_kind(object::sniff_kind(text).unwrap_or("")) => {
            match object::from_json_str(text) {
                Ok(Some(obj)) => out.objects.push(Located {
                    value: obj,
                    file: file.to_string(),
                    line,
                }),
                Ok(None) => {
                    let kind = object::sniff_kind(text).unwrap_or("");
                    notes.0.push(format!(
                        "{file}:{line}: skipped {kind} (kubestep does not use this kind)"
                    ));
                }
                Err(error) => {
                    // A syntax error is said where it is; anything else names the object.
                    if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
                        let col = if e.line() <= 1 {
                            e.column() + column - 1
                        } else {
                            e.column()
                        };
                        return Err(syntax(
                            line + e.line().saturating_sub(1),
                            format!("column {col}: {}", strip_at(&e.to_string())),
                        ));
                    }
                    return Err(doc.object_error(error, ""));
                }
            }
        }
        Format::Json => {
            let v: Value = serde_json::from_str(text).map_err(|e| {
                syntax(
                    line + e.line().saturating_sub(1),
                    format!("column {}: {}", e.column(), strip_at(&e.to_string())),
                )
            })?;
            manifest::collect(v, &doc, "", &mut out.objects, &mut notes)?;
        }
        Format::Yaml => {
            let v: Value = serde_saphyr::from_str_with_options(text, manifest::yaml_options())
                .map_err(|e| {
                    let (l, message) = manifest::yaml_error(&e, line);
                    syntax(l, message)
                })?;
            if !v.is_null() {
                manifest::collect(v, &doc, "", &mut out.objects, &mut notes)?;
            }
        }
    }
    out.notes = notes.0;
    if lean {
        out.objects = out
            .objects
            .into_iter()
            .map(|o| Located {
                value: o.value.lean(),
                ..o
            })
            .collect();
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
