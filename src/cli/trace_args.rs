//! Options shared by the headless commands: how much to print, and how much history to
//! keep.

use clap::ValueEnum;

use kubestep::session::trace::TraceLevel;

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq, Default)]
pub enum TraceArg {
    /// One line per attempt: result, node or message, nomination, each extension point's
    /// status and time.
    #[default]
    Attempts,
    /// Also one line per step (an extension point, or one plugin of one).
    Steps,
    /// Steps, and after each attempt its verdict matrix, scores and CycleState after each
    /// step, recomputed by re-running the attempt (large at thousands of nodes).
    Full,
}

impl From<TraceArg> for TraceLevel {
    fn from(t: TraceArg) -> TraceLevel {
        match t {
            TraceArg::Attempts => TraceLevel::Attempts,
            TraceArg::Steps => TraceLevel::Steps,
            TraceArg::Full => TraceLevel::Full,
        }
    }
}

/// A size in bytes: `96MiB`, `512M`, `2G`, `64k`, `1000000` (shared with the config
/// file's `history`).
pub fn parse_size(s: &str) -> Result<usize, String> {
    kubestep::tui::config::parse_size(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("96MiB"), Ok(96 << 20));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("1.5k"), Ok(1536));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("3 parsecs").unwrap_err().contains("unit"));
    }
}
