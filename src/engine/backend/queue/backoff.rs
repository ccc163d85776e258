//! Backoff arithmetic on the virtual clock: exponential backoff per pod, aligned to
//! one-second windows (SchedulerPopFromBackoffQ is on in v1.35).

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use crate::framework::queued::QueuedPodInfo;

/// The ordering window of backoffQ, and the period of the backoff flush.
pub const BACKOFF_WINDOW: Duration = Duration::from_secs(1);

fn nanos(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

/// `t + d`, saturating at the ends of time. Exact for any span a recording can hold (a
/// nanosecond count would overflow past 292 years).
pub fn add(t: Timestamp, d: Duration) -> Timestamp {
    let sd = SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX);
    t.checked_add(sd).unwrap_or(Timestamp::MAX)
}

/// `t` truncated to the start of its one-second window.
pub fn truncate_to_window(t: Timestamp) -> Timestamp {
    let mut secs = t.as_second();
    if t.subsec_nanosecond() < 0 {
        secs -= 1;
    }
    Timestamp::from_second(secs).unwrap_or(t)
}

/// `initial << (count - 1)`, capped at `max` (1s, 2s, 4s, 8s, 10s, 10s... by default).
pub fn backoff_duration(initial: Duration, max: Duration, count: u32) -> Duration {
    if count == 0 {
        return Duration::ZERO;
    }
    let shift = count - 1;
    let (initial, max) = (nanos(initial), nanos(max));
    if shift >= 63 || initial > (max >> shift) {
        return Duration::from_nanos(u64::try_from(max).unwrap_or(0));
    }
    Duration::from_nanos(u64::try_from(initial << shift).unwrap_or(0))
}

/// When the pod's backoff ends: its timestamp plus the backoff for its count (the
/// consecutive errors if any, else the unschedulable count), truncated to the window.
/// `None` (no backoff) when the count is 0 or the maximum backoff is 0.
pub fn backoff_expiry(qpi: &QueuedPodInfo, initial: Duration, max: Duration) -> Option<Timestamp> {
    if max.is_zero() {
        return None;
    }
    let count = if qpi.consecutive_errors_count > 0 {
        qpi.consecutive_errors_count
    } else {
        qpi.unschedulable_count
    };
    if count == 0 {
        return None;
    }
    Some(truncate_to_window(add(
        qpi.timestamp,
        backoff_duration(initial, max, count),
    )))
}

/// Still backing off at `now`: the expiry is not before the start of now's window.
pub fn is_backing_off(expiry: Option<Timestamp>, now: Timestamp) -> bool {
    expiry.is_some_and(|e| e >= truncate_to_window(now))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adding_centuries_is_exact() {
        let t = Timestamp::from_second(-7_600_000_000).unwrap(); // year 1729
        let later = add(t, Duration::from_secs(300 * 365 * 86_400));
        assert_eq!(later.as_second(), -7_600_000_000 + 300 * 365 * 86_400);
        assert_eq!(add(Timestamp::MAX, Duration::from_secs(1)), Timestamp::MAX);
    }

    #[test]
    fn doubling_capped_at_max() {
        let (i, m) = (Duration::from_secs(1), Duration::from_secs(10));
        let got: Vec<u64> = (1..=7)
            .map(|c| backoff_duration(i, m, c).as_secs())
            .collect();
        assert_eq!(got, vec![1, 2, 4, 8, 10, 10, 10]);
        assert_eq!(backoff_duration(i, m, 0), Duration::ZERO);
        assert_eq!(backoff_duration(i, m, 200), m);
    }

    #[test]
    fn windows_and_backing_off() {
        let t = Timestamp::from_millisecond(10_700).unwrap();
        assert_eq!(truncate_to_window(t), Timestamp::from_second(10).unwrap());
        let e = Some(Timestamp::from_second(11).unwrap());
        // Backing off for the whole window of the expiry, done from the next one.
        assert!(is_backing_off(
            e,
            Timestamp::from_millisecond(11_999).unwrap()
        ));
        assert!(!is_backing_off(e, Timestamp::from_second(12).unwrap()));
        assert!(!is_backing_off(None, t));
    }
}
