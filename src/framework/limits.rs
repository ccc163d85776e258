//! The most kubestep reads of any one input, in one place (README.md, "Limits").
//!
//! Recordings, dumps and configurations travel: people attach them to bug reports and
//! open each other's. Nothing read from one may take memory without bound, so each kind
//! of read has a cap, checked while reading (never after holding the whole thing):
//!
//! * a line (of a recording or a scheduler log), a YAML or JSON document, or one item of
//!   a List is at most [`LINE`]. The cap is per line or item, never per stream: a dump
//!   of any size is read item by item, and a gzip stream is capped by its decompressed
//!   lines, not by the file;
//! * a file read whole (a theme, the UI's config, a script, a kubeconfig) is at most
//!   [`WHOLE_FILE`]; a scheduler configuration at most `config::node::MAX_INPUT_BYTES`,
//!   its parser's budget;
//! * an extender's answer is at most [`EXTENDER_BODY`].

use std::io::{self, BufRead, Read};

/// A line, a document or a List's item. Kubernetes keeps an object in etcd only up to
/// 1.5 MiB; a YAML rendering of one is larger, but nowhere near this.
pub const LINE: usize = 64 << 20;

/// A file kubestep reads whole at once: theme, UI config, script, kubeconfig.
pub const WHOLE_FILE: usize = 16 << 20;

/// The body of an extender's answer (filter answers list nodes, a few KiB each).
pub const EXTENDER_BODY: usize = 64 << 20;

/// `64 MiB`: a limit as messages say it.
pub fn size(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// A line longer than the cap, found before it was held whole.
#[derive(Debug)]
pub enum LineError {
    Io(io::Error),
    /// The line is longer than this many bytes.
    TooLong(usize),
}

impl LineError {
    /// What is wrong, for a message that already names the file and line.
    pub fn describe(&self) -> String {
        match self {
            LineError::Io(e) => e.to_string(),
            LineError::TooLong(limit) => too_long("line", *limit),
        }
    }
}

/// `the line is longer than 64 MiB (the most kubestep reads of one line)`.
pub fn too_long(what: &str, limit: usize) -> String {
    format!(
        "the {what} is longer than {} (the most kubestep reads of one {what})",
        size(limit)
    )
}

/// `the document starting here is larger than 64 MiB (the most kubestep reads of one
/// document)`, for a message that names where it starts.
pub fn too_large(what: &str, limit: usize) -> String {
    format!(
        "the {what} starting here is larger than {} (the most kubestep reads of one {what})",
        size(limit)
    )
}

/// `BufRead::read_until(b'\n')` that appends at most `limit` bytes of the line (its
/// newline not counted) to `buf`: a line without end fails once it passes the limit,
/// having held no more than that. Returns the bytes appended; 0 at the end of input.
pub fn read_line(
    r: &mut impl BufRead,
    buf: &mut Vec<u8>,
    limit: usize,
) -> Result<usize, LineError> {
    let start = buf.len();
    loop {
        let available = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // A line cut by an error is not a line.
                buf.truncate(start);
                return Err(LineError::Io(e));
            }
        };
        if available.is_empty() {
            return Ok(buf.len() - start);
        }
        let (take, done) = match memchr::memchr(b'\n', available) {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        let content = buf.len() - start + take - usize::from(done);
        if content > limit {
            buf.truncate(start);
            return Err(LineError::TooLong(limit));
        }
        buf.extend_from_slice(&available[..take]);
        r.consume(take);
        if done {
            return Ok(buf.len() - start);
        }
    }
}

/// Everything `r` holds, when that is at most `limit` bytes; more is an error of kind
/// `InvalidData` saying so, found having read `limit + 1` bytes. `what` names the input
/// in that error (`a theme file`).
pub fn read_to_end(r: impl Read, limit: usize, what: &str) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    r.take(limit as u64 + 1).read_to_end(&mut out)?;
    if out.len() > limit {
        return Err(file_too_large(limit, what));
    }
    Ok(out)
}

fn file_too_large(limit: usize, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "larger than {} (the most kubestep reads of {what})",
            size(limit)
        ),
    )
}

/// The file at `path`, read whole if it holds at most `limit` bytes (see `read_to_end`).
pub fn read_file(path: &std::path::Path, limit: usize, what: &str) -> io::Result<Vec<u8>> {
    let f = std::fs::File::open(path)?;
    // A regular file says its size; a pipe, a device or a file still growing is caught
    // by the bounded read.
    if f.metadata()
        .is_ok_and(|m| m.is_file() && m.len() > limit as u64)
    {
        return Err(file_too_large(limit, what));
    }
    read_to_end(f, limit, what)
}

/// `read_file` as text; invalid UTF-8 is an error of kind `InvalidData`.
pub fn read_file_to_string(path: &std::path::Path, limit: usize, what: &str) -> io::Result<String> {
    String::from_utf8(read_file(path, limit, what)?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_up_to_the_limit_are_read_and_longer_ones_refused() {
        let mut r = io::BufReader::with_capacity(4, &b"abcd\nabcde\nab"[..]);
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut r, &mut buf, 4).unwrap(), 5);
        assert_eq!(buf, b"abcd\n");
        buf.clear();
        assert!(matches!(
            read_line(&mut r, &mut buf, 4),
            Err(LineError::TooLong(4))
        ));
        assert!(buf.is_empty());
        let mut r = &b"ab"[..];
        assert_eq!(read_line(&mut r, &mut buf, 4).unwrap(), 2);
        assert_eq!(read_line(&mut r, &mut buf, 4).unwrap(), 0);
        assert_eq!(
            LineError::TooLong(LINE).describe(),
            "the line is longer than 64 MiB (the most kubestep reads of one line)"
        );
    }

    #[test]
    fn whole_reads_stop_past_the_limit() {
        assert_eq!(read_to_end(&b"abc"[..], 3, "x").unwrap(), b"abc");
        let e = read_to_end(io::repeat(b'a'), 16 << 20, "a theme file").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert_eq!(
            e.to_string(),
            "larger than 16 MiB (the most kubestep reads of a theme file)"
        );
        assert_eq!(size(1536), "1536 bytes");
        assert_eq!(size(4 << 20), "4 MiB");
    }
}
