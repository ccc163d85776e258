//! A progress line on a terminal's standard error: one line redrawn in place, at most a
//! few times a second, and wiped at the end, so what stays on the screen is the output.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Moves to the line's start and erases it (the sequence `record`'s progress uses too).
pub const CLEAR: &str = "\r\x1b[2K";

pub struct TtyLine {
    every: Duration,
    last: Option<Instant>,
    /// Something is on the line, to be wiped at the end.
    drawn: bool,
}

impl TtyLine {
    /// A line redrawn at most once per `every`; `None` when standard error is not a
    /// terminal (a file or a pipe gets no progress: it would only fill it), or when
    /// standard output is the same terminal, where the output's own lines are the
    /// progress and a redrawn line would be cut into them.
    pub fn on_stderr(every: Duration) -> Option<TtyLine> {
        let stderr = std::io::stderr();
        if !stderr.is_terminal() || std::io::stdout().is_terminal() {
            return None;
        }
        Some(TtyLine {
            every,
            last: None,
            drawn: false,
        })
    }

    /// Whether a redraw is due: the first call, then once per `every`.
    pub fn due(&self) -> bool {
        self.last.is_none_or(|t| t.elapsed() >= self.every)
    }

    /// Replaces the line with `text`.
    pub fn draw(&mut self, text: &str) {
        self.last = Some(Instant::now());
        self.drawn = true;
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{CLEAR}{text}");
        let _ = err.flush();
    }

    /// Wipes the line; the next `draw` is due at once.
    pub fn clear(&mut self) {
        self.last = None;
        if std::mem::take(&mut self.drawn) {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "{CLEAR}");
            let _ = err.flush();
        }
    }
}

impl Drop for TtyLine {
    fn drop(&mut self) {
        // An error return leaves no half-drawn line before its message.
        self.clear();
    }
}

/// `+HH:MM:SS` from a duration (virtual time since a recording's start).
pub fn clock_offset(d: Duration) -> String {
    let s = d.as_secs();
    format!("+{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// A count with thousands separators, as the README's numbers are written.
pub fn count(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_and_counts_read_as_written_elsewhere() {
        assert_eq!(clock_offset(Duration::from_secs(0)), "+00:00:00");
        assert_eq!(
            clock_offset(Duration::from_secs(3 * 3600 + 61)),
            "+03:01:01"
        );
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(22_020), "22,020");
        assert_eq!(count(1_234_567), "1,234,567");
    }
}
