//! Kubernetes resource quantities (`500m`, `1.5Gi`, `2e3`, ...), parsed exactly.
//!
//! A quantity is held as a whole number of nano-units (10^-9), the finest precision the
//! API machinery keeps: non-zero values are rounded *up* to the next nano-unit as upstream
//! does, so a request never rounds down to nothing. Arithmetic on the digits is done with a
//! small arbitrary-precision integer, so there are no float rounding surprises; values too
//! large for 128 bits saturate.

use std::fmt;

/// Why a quantity string was refused. The texts follow apimachinery's errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    Format,
    #[error("unable to parse quantity's suffix")]
    Suffix,
    #[error("unable to parse quantity's numeric part")]
    Numeric,
}

/// An exact quantity in nano-units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Quantity {
    nanos: i128,
}

const NANO_DIGITS: i64 = 9;

impl Quantity {
    pub const ZERO: Quantity = Quantity { nanos: 0 };

    pub fn parse(s: &str) -> Result<Quantity, QuantityError> {
        parse(s)
    }

    pub fn from_nanos(nanos: i128) -> Quantity {
        Quantity { nanos }
    }

    pub fn nanos(&self) -> i128 {
        self.nanos
    }

    /// ceil(q), saturated to i64, as upstream `Value()`.
    pub fn value(&self) -> i64 {
        self.scaled_ceil(1_000_000_000)
    }

    /// ceil(q * 1000), saturated to i64, as upstream `MilliValue()`.
    pub fn milli_value(&self) -> i64 {
        self.scaled_ceil(1_000_000)
    }

    fn scaled_ceil(&self, per_unit: i128) -> i64 {
        let q = self.nanos.div_euclid(per_unit);
        let r = self.nanos.rem_euclid(per_unit);
        let v = if r != 0 { q.saturating_add(1) } else { q };
        v.clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }

    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }
}

impl fmt::Display for Quantity {
    /// A plain decimal rendering (no suffix), exact to the nano-unit.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let neg = self.nanos < 0;
        let abs = self.nanos.unsigned_abs();
        let whole = abs / 1_000_000_000;
        let frac = abs % 1_000_000_000;
        if neg {
            write!(f, "-")?;
        }
        if frac == 0 {
            write!(f, "{whole}")
        } else {
            let s = format!("{frac:09}");
            write!(f, "{whole}.{}", s.trim_end_matches('0'))
        }
    }
}

impl std::str::FromStr for Quantity {
    type Err = QuantityError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse(s)
    }
}

/// Multiplier named by a suffix.
enum Multiplier {
    /// 10^exp
    Decimal(i64),
    /// 2^exp
    Binary(u32),
}

fn suffix_multiplier(suffix: &str) -> Option<Multiplier> {
    use Multiplier::*;
    Some(match suffix {
        "" => Decimal(0),
        "n" => Decimal(-9),
        "u" => Decimal(-6),
        "m" => Decimal(-3),
        "k" => Decimal(3),
        "M" => Decimal(6),
        "G" => Decimal(9),
        "T" => Decimal(12),
        "P" => Decimal(15),
        "E" => Decimal(18),
        "Ki" => Binary(10),
        "Mi" => Binary(20),
        "Gi" => Binary(30),
        "Ti" => Binary(40),
        "Pi" => Binary(50),
        "Ei" => Binary(60),
        _ => {
            let rest = suffix.strip_prefix(['e', 'E'])?;
            if rest.is_empty() {
                return None;
            }
            // Exponents beyond any representable magnitude saturate anyway; bound them
            // so the digit arithmetic below stays small.
            let exp: i64 = rest.parse().ok()?;
            Decimal(exp.clamp(-10_000, 10_000))
        }
    })
}

/// Splits a quantity string as apimachinery's `parseQuantityString` does.
fn split(s: &str) -> Result<(bool, &str, &str, &str), QuantityError> {
    let b = s.as_bytes();
    let mut pos = 0;
    let mut positive = true;
    if let Some(&c) = b.first() {
        if c == b'-' {
            positive = false;
            pos = 1;
        } else if c == b'+' {
            pos = 1;
        }
    }
    let num_start = pos;
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let num = &s[num_start..pos];
    let mut denom = "";
    if pos < b.len() && b[pos] == b'.' {
        pos += 1;
        let d_start = pos;
        while pos < b.len() && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[d_start..pos];
    }
    let suffix_start = pos;
    while pos < b.len() && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < b.len() && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos != b.len() {
        return Err(QuantityError::Format);
    }
    Ok((positive, num, denom, &s[suffix_start..]))
}

fn parse(s: &str) -> Result<Quantity, QuantityError> {
    if s.is_empty() {
        return Err(QuantityError::Format);
    }
    let (positive, num, denom, suffix) = split(s)?;
    let mult = suffix_multiplier(suffix).ok_or(QuantityError::Suffix)?;
    if num.is_empty() && denom.is_empty() {
        return Err(QuantityError::Numeric);
    }
    // value = digits * 10^-len(denom) * mult, expressed in nanos.
    let mut digits = BigUint::from_decimal(num, denom);
    let mut ten_exp: i64 = NANO_DIGITS - denom.len() as i64;
    match mult {
        Multiplier::Decimal(e) => ten_exp += e,
        Multiplier::Binary(e) => digits.mul_pow2(e),
    }
    let nanos = digits.scale_pow10_ceil(ten_exp);
    let nanos = if positive { nanos } else { -nanos };
    Ok(Quantity { nanos })
}

/// Just enough of an unsigned big integer for exact quantity parsing (base 10^9 limbs,
/// least significant first).
struct BigUint {
    limbs: Vec<u64>,
}

const LIMB: u64 = 1_000_000_000;

impl BigUint {
    fn from_decimal(num: &str, denom: &str) -> BigUint {
        let mut n = BigUint { limbs: vec![0] };
        for c in num.bytes().chain(denom.bytes()) {
            n.mul_add_small(10, u64::from(c - b'0'));
        }
        n
    }

    fn mul_add_small(&mut self, m: u64, add: u64) {
        let mut carry = add;
        for limb in &mut self.limbs {
            let v = *limb * m + carry;
            *limb = v % LIMB;
            carry = v / LIMB;
        }
        while carry > 0 {
            self.limbs.push(carry % LIMB);
            carry /= LIMB;
        }
    }

    /// Divides in place, returning whether the remainder was non-zero.
    fn div_small(&mut self, d: u64) -> bool {
        let mut rem = 0u64;
        for limb in self.limbs.iter_mut().rev() {
            let cur = rem * LIMB + *limb;
            *limb = cur / d;
            rem = cur % d;
        }
        self.trim();
        rem != 0
    }

    fn trim(&mut self) {
        while self.limbs.len() > 1 && *self.limbs.last().unwrap_or(&1) == 0 {
            self.limbs.pop();
        }
    }

    fn is_zero(&self) -> bool {
        self.limbs.iter().all(|&l| l == 0)
    }

    fn mul_pow2(&mut self, e: u32) {
        for _ in 0..e {
            self.mul_add_small(2, 0);
        }
    }

    /// ceil(self * 10^exp) as i128, saturating.
    fn scale_pow10_ceil(mut self, exp: i64) -> i128 {
        if self.is_zero() {
            return 0;
        }
        if exp >= 0 {
            for _ in 0..exp {
                self.mul_add_small(10, 0);
                if self.limbs.len() > 5 {
                    return i128::MAX;
                }
            }
            return self.to_i128_saturating();
        }
        let mut inexact = false;
        for _ in 0..(-exp) {
            inexact |= self.div_small(10);
            if self.is_zero() {
                break;
            }
        }
        let v = self.to_i128_saturating();
        if inexact { v.saturating_add(1) } else { v }
    }

    fn to_i128_saturating(&self) -> i128 {
        let mut v: i128 = 0;
        for &limb in self.limbs.iter().rev() {
            v = match v
                .checked_mul(LIMB as i128)
                .and_then(|x| x.checked_add(limb as i128))
            {
                Some(x) => x,
                None => return i128::MAX,
            };
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn milli(s: &str) -> i64 {
        Quantity::parse(s).unwrap().milli_value()
    }
    fn val(s: &str) -> i64 {
        Quantity::parse(s).unwrap().value()
    }

    #[test]
    fn decimal_si_suffixes() {
        assert_eq!(milli("500m"), 500);
        assert_eq!(milli("0.5"), 500);
        assert_eq!(milli("2"), 2000);
        assert_eq!(val("1k"), 1000);
        assert_eq!(val("8G"), 8_000_000_000);
        assert_eq!(val("50G"), 50_000_000_000);
        assert_eq!(val("1E"), 1_000_000_000_000_000_000);
        assert_eq!(val("3T"), 3_000_000_000_000);
        assert_eq!(val("2P"), 2_000_000_000_000_000);
        assert_eq!(val("1M"), 1_000_000);
    }

    #[test]
    fn binary_si_suffixes() {
        assert_eq!(val("1Ki"), 1024);
        assert_eq!(val("200Mi"), 200 * 1024 * 1024);
        assert_eq!(val("1.5Gi"), 1536 * 1024 * 1024);
        assert_eq!(val("8388608Ki"), 8 * 1024 * 1024 * 1024);
        assert_eq!(val("1Ti"), 1 << 40);
        assert_eq!(val("1Pi"), 1 << 50);
        assert_eq!(val("1Ei"), 1 << 60);
    }

    #[test]
    fn exponents() {
        assert_eq!(val("1e3"), 1000);
        assert_eq!(val("1E3"), 1000);
        assert_eq!(val("12e-1"), 2); // 1.2 rounds up
        assert_eq!(milli("12e-1"), 1200);
        assert_eq!(val("1e+3"), 1000);
    }

    #[test]
    fn rounding_is_upward_to_nanos_and_ceil_for_value() {
        assert_eq!(milli("1n"), 1);
        assert_eq!(milli("1u"), 1);
        assert_eq!(milli("0.0001"), 1);
        assert_eq!(Quantity::parse("0.0000000001").unwrap().nanos(), 1);
        assert_eq!(val("0.1"), 1);
        assert_eq!(val("100m"), 1);
        assert_eq!(milli("-100m"), -100);
        assert_eq!(val("-0.5"), 0);
    }

    #[test]
    fn odd_but_valid_forms() {
        assert_eq!(milli(".5"), 500);
        assert_eq!(milli("1."), 1000);
        assert_eq!(milli("+1"), 1000);
        assert_eq!(milli("007"), 7000);
        assert_eq!(milli("0"), 0);
        assert_eq!(milli("1.G") / 1000, 1_000_000_000);
    }

    #[test]
    fn invalid_forms() {
        for s in [
            "", ".", "abc", "1.5.5", "1Gb", "1 Gi", "--1", "1e", "1Ki3", "1x", "Gi", "e3",
        ] {
            assert!(Quantity::parse(s).is_err(), "{s:?} should be invalid");
        }
        assert_eq!(Quantity::parse("1Q"), Err(QuantityError::Format));
        assert_eq!(Quantity::parse("1kk"), Err(QuantityError::Suffix));
    }

    #[test]
    fn huge_values_saturate() {
        assert_eq!(val("1e100"), i64::MAX);
        assert_eq!(val("99999999999999999999999999999999999999999"), i64::MAX);
        assert_eq!(val("-1e100"), i64::MIN);
        assert_eq!(val("1e-100"), 1);
    }

    #[test]
    fn display_is_exact() {
        assert_eq!(Quantity::parse("1500m").unwrap().to_string(), "1.5");
        assert_eq!(Quantity::parse("2Ki").unwrap().to_string(), "2048");
    }
}
