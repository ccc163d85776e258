//! `metav1.Duration`: a signed duration written as Go writes it (`"10s"`, `"1m30s"`, `"-1s"`).

use std::fmt;

use serde::{Serialize, Serializer};

/// A signed duration in nanoseconds, parsed and printed with Go's `time` rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration {
    pub nanos: i64,
}

const NS: u64 = 1;
const US: u64 = 1_000 * NS;
const MS: u64 = 1_000 * US;
const S: u64 = 1_000 * MS;
const MIN: u64 = 60 * S;
const H: u64 = 60 * MIN;

impl Duration {
    pub const ZERO: Duration = Duration { nanos: 0 };

    pub const fn from_secs(s: i64) -> Self {
        Duration {
            nanos: s * 1_000_000_000,
        }
    }

    pub const fn from_nanos(nanos: i64) -> Self {
        Duration { nanos }
    }

    pub fn is_zero(self) -> bool {
        self.nanos == 0
    }

    /// The duration as `std::time::Duration`, or `None` when negative.
    pub fn to_std(self) -> Option<std::time::Duration> {
        u64::try_from(self.nanos)
            .ok()
            .map(std::time::Duration::from_nanos)
    }

    /// Go's `time.ParseDuration`.
    pub fn parse(s: &str) -> Result<Duration, String> {
        let orig = s;
        let invalid = || format!("time: invalid duration {}", super::field::go_quote(orig));
        let mut s = s;
        let mut neg = false;
        if let Some(rest) = s.strip_prefix('-') {
            neg = true;
            s = rest;
        } else if let Some(rest) = s.strip_prefix('+') {
            s = rest;
        }
        if s == "0" {
            return Ok(Duration::ZERO);
        }
        if s.is_empty() {
            return Err(invalid());
        }
        let mut total: u64 = 0;
        while !s.is_empty() {
            // integer part
            let int_len = s.bytes().take_while(|b| b.is_ascii_digit()).count();
            let (int_str, rest) = s.split_at(int_len);
            s = rest;
            let mut frac_str = "";
            if let Some(rest) = s.strip_prefix('.') {
                let n = rest.bytes().take_while(|b| b.is_ascii_digit()).count();
                frac_str = &rest[..n];
                s = &rest[n..];
                if int_str.is_empty() && frac_str.is_empty() {
                    return Err(invalid());
                }
            } else if int_str.is_empty() {
                return Err(invalid());
            }
            let unit_len = s
                .char_indices()
                .find(|(_, c)| *c == '.' || c.is_ascii_digit())
                .map(|(i, _)| i)
                .unwrap_or(s.len());
            if unit_len == 0 {
                return Err(format!(
                    "time: missing unit in duration {}",
                    super::field::go_quote(orig)
                ));
            }
            let unit = &s[..unit_len];
            s = &s[unit_len..];
            let scale = match unit {
                "ns" => NS,
                "us" | "µs" | "μs" => US,
                "ms" => MS,
                "s" => S,
                "m" => MIN,
                "h" => H,
                _ => {
                    return Err(format!(
                        "time: unknown unit {} in duration {}",
                        super::field::go_quote(unit),
                        super::field::go_quote(orig)
                    ));
                }
            };
            let int_val: u64 = if int_str.is_empty() {
                0
            } else {
                int_str.parse().map_err(|_| invalid())?
            };
            let mut v = int_val.checked_mul(scale).ok_or_else(invalid)?;
            if !frac_str.is_empty() {
                // fraction * scale, truncated, as Go does with float arithmetic on the digits.
                let mut f: f64 = 0.0;
                let mut place = 1.0;
                for d in frac_str.bytes() {
                    place /= 10.0;
                    f += f64::from(d - b'0') * place;
                }
                v = v
                    .checked_add((f * scale as f64) as u64)
                    .ok_or_else(invalid)?;
            }
            total = total.checked_add(v).ok_or_else(invalid)?;
            if total > i64::MAX as u64 + u64::from(neg) {
                return Err(invalid());
            }
        }
        let nanos = if neg {
            (total as i128).wrapping_neg() as i64
        } else {
            total as i64
        };
        Ok(Duration { nanos })
    }
}

/// Writes `v / 10^prec` with its fractional digits (trailing zeros dropped) and returns the
/// integer part, as Go's `fmtFrac`.
fn frac(v: u64, prec: u32) -> (String, u64) {
    let mut digits = String::new();
    let mut print = false;
    let mut v = v;
    for _ in 0..prec {
        let digit = v % 10;
        print = print || digit != 0;
        if print {
            digits.insert(0, char::from(b'0' + digit as u8));
        }
        v /= 10;
    }
    if print {
        digits.insert(0, '.');
    }
    (digits, v)
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let neg = self.nanos < 0;
        let u = self.nanos.unsigned_abs();
        let text = if u == 0 {
            "0s".to_string()
        } else if u < S {
            let (unit, prec) = if u < US {
                ("ns", 0)
            } else if u < MS {
                ("µs", 3)
            } else {
                ("ms", 6)
            };
            let (fr, int) = frac(u, prec);
            format!("{int}{fr}{unit}")
        } else {
            let (fr, rest) = frac(u, 9);
            let secs = rest % 60;
            let mins_total = rest / 60;
            if mins_total == 0 {
                format!("{secs}{fr}s")
            } else {
                let mins = mins_total % 60;
                let hours = mins_total / 60;
                if hours == 0 {
                    format!("{mins}m{secs}{fr}s")
                } else {
                    format!("{hours}h{mins}m{secs}{fr}s")
                }
            }
        };
        if neg {
            write!(f, "-{text}")
        } else {
            f.write_str(&text)
        }
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_like_go() {
        let cases = [
            (0, "0s"),
            (1, "1ns"),
            (1_100, "1.1µs"),
            (2_200_000, "2.2ms"),
            (3_300_000_000, "3.3s"),
            (4 * 60 * 1_000_000_000 + 5_000_000_000, "4m5s"),
            (3_600_000_000_000, "1h0m0s"),
            (10_000_000_000, "10s"),
            (-1_000_000_000, "-1s"),
            (600_000_000_000, "10m0s"),
        ];
        for (n, s) in cases {
            assert_eq!(Duration::from_nanos(n).to_string(), s);
        }
    }

    #[test]
    fn parse_like_go() {
        assert_eq!(Duration::parse("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(Duration::parse("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(Duration::parse("1.5h").unwrap(), Duration::from_secs(5400));
        assert_eq!(Duration::parse("-1s").unwrap(), Duration::from_secs(-1));
        assert_eq!(Duration::parse("0").unwrap(), Duration::ZERO);
        assert_eq!(
            Duration::parse("300ms").unwrap(),
            Duration::from_nanos(300_000_000)
        );
        assert_eq!(
            Duration::parse("1").unwrap_err(),
            "time: missing unit in duration \"1\""
        );
        assert_eq!(
            Duration::parse("1d").unwrap_err(),
            "time: unknown unit \"d\" in duration \"1d\""
        );
        assert_eq!(
            Duration::parse("x").unwrap_err(),
            "time: invalid duration \"x\""
        );
        assert!(Duration::parse("").is_err());
        assert!(Duration::parse("99999999999999999999h").is_err());
    }
}
