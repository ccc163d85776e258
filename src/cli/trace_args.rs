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

/// A size in bytes: `96MiB`, `512M`, `2G`, `64k`, `1000000` (binary units; `0` keeps
/// nothing).
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| {
        format!("{s:?} is not a size: give a number with an optional unit (e.g. 96MiB)")
    })?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        other => {
            return Err(format!(
                "{s:?} is not a size: unknown unit {other:?} (use KiB, MiB or GiB)"
            ));
        }
    };
    Ok((n * mult) as usize)
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
