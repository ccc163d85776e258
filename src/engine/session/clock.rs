//! Time for the engine: wall time when live, virtual time in replay and tests. Backoff,
//! Permit timeouts and queue flushes read it; nothing in the engine sleeps.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

#[derive(Debug, Clone)]
pub enum Clock {
    /// Moves only when told to.
    Virtual(Timestamp),
    /// Follows the system clock.
    Wall,
}

impl Clock {
    pub fn virtual_at(t: Timestamp) -> Clock {
        Clock::Virtual(t)
    }

    pub fn now(&self) -> Timestamp {
        match self {
            Clock::Virtual(t) => *t,
            Clock::Wall => Timestamp::now(),
        }
    }

    pub fn is_virtual(&self) -> bool {
        matches!(self, Clock::Virtual(_))
    }

    /// Moves a virtual clock to `t` (never backwards). A wall clock ignores it.
    pub fn set(&mut self, t: Timestamp) {
        if let Clock::Virtual(now) = self
            && t > *now
        {
            *now = t;
        }
    }
}

pub fn add(t: Timestamp, d: Duration) -> Timestamp {
    t.checked_add(SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX))
        .unwrap_or(Timestamp::MAX)
}

pub fn since(later: Timestamp, earlier: Timestamp) -> Duration {
    later
        .duration_since(earlier)
        .try_into()
        .unwrap_or(Duration::ZERO)
}

/// Parses durations as people write them in scripts: `30s`, `5m`, `1h30m`, `250ms`, `2.5s`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty duration".into());
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return Err(format!(
                "invalid duration {s:?}: expected a number at {rest:?}"
            ));
        }
        let n: f64 = rest[..num_len]
            .parse()
            .map_err(|_| format!("invalid duration {s:?}"))?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let secs = match &rest[..unit_len] {
            "ms" => n / 1000.0,
            "s" | "" => n,
            "m" => n * 60.0,
            "h" => n * 3600.0,
            u => {
                return Err(format!(
                    "invalid duration {s:?}: unknown unit {u:?} (use ms, s, m, h)"
                ));
            }
        };
        total += secs;
        rest = &rest[unit_len..];
    }
    if !total.is_finite() || total > 1e9 {
        return Err(format!("invalid duration {s:?}: too long"));
    }
    Ok(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2.5s").unwrap(), Duration::from_millis(2500));
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5d").is_err());
    }

    #[test]
    fn virtual_clock_moves_forward_only() {
        let mut c = Clock::virtual_at(Timestamp::from_second(100).unwrap());
        c.set(Timestamp::from_second(50).unwrap());
        assert_eq!(c.now(), Timestamp::from_second(100).unwrap());
        c.set(Timestamp::from_second(150).unwrap());
        assert_eq!(c.now(), Timestamp::from_second(150).unwrap());
    }
}
