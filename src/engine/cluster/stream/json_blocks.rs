//! The splitter's fast path: inside a document, only brackets outside strings and
//! newlines matter, so 64 bytes at a time are classified into bit masks and the
//! brackets are walked bit by bit (the first stage of simdjson, without escapes). A block
//! holding a backslash goes to the byte-by-byte scanner, which knows escapes.

/// Where the fast path stopped.
pub(super) enum Stop {
    /// At this close bracket, which ends the document: the scanner takes it from here.
    DocEnd(usize),
    /// The 64 bytes from here hold a backslash: the scanner goes through them.
    Backslash(usize),
    /// Fewer than 64 bytes are left from here.
    Short(usize),
}

/// The scanner state the fast path reads and moves on.
pub(super) struct Cursor<'s> {
    pub depth: &'s mut u32,
    pub in_str: &'s mut bool,
    pub line: &'s mut usize,
    pub line_start: &'s mut u64,
    /// Absolute offset of the window's first byte.
    pub base: u64,
    /// The document ends when a close bracket brings the depth back to this.
    pub end_depth: u32,
}

struct Masks {
    quote: u64,
    backslash: u64,
    newline: u64,
    open: u64,
    close: u64,
}

/// Bit `j` of each mask: whether byte `j` is that character. `| 0x20` folds `[` onto `{`
/// and `]` onto `}`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn classify(b: &[u8; 64]) -> Masks {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    let mut m = Masks {
        quote: 0,
        backslash: 0,
        newline: 0,
        open: 0,
        close: 0,
    };
    for (k, part) in b.chunks_exact(16).enumerate() {
        let shift = 16 * k;
        // SAFETY: SSE2 is in every x86_64 CPU (the target's baseline, always enabled);
        // `part` is 16 readable bytes and the load needs no alignment.
        unsafe {
            let v = _mm_loadu_si128(part.as_ptr().cast());
            let bits = |x| u64::from(_mm_movemask_epi8(x) as u16) << shift;
            let folded = _mm_or_si128(v, _mm_set1_epi8(0x20));
            m.quote |= bits(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)));
            m.backslash |= bits(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8)));
            m.newline |= bits(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'\n' as i8)));
            m.open |= bits(_mm_cmpeq_epi8(folded, _mm_set1_epi8(b'{' as i8)));
            m.close |= bits(_mm_cmpeq_epi8(folded, _mm_set1_epi8(b'}' as i8)));
        }
    }
    m
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn classify(b: &[u8; 64]) -> Masks {
    let bits = |f: &dyn Fn(u8) -> bool| {
        b.iter()
            .enumerate()
            .fold(0u64, |m, (j, &c)| m | (u64::from(f(c)) << j))
    };
    Masks {
        quote: bits(&|c| c == b'"'),
        backslash: bits(&|c| c == b'\\'),
        newline: bits(&|c| c == b'\n'),
        open: bits(&|c| c | 0x20 == b'{'),
        close: bits(&|c| c | 0x20 == b'}'),
    }
}

/// Bit `j`: the parity of the set bits of `x` at or below `j`.
#[inline(always)]
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// Moves the cursor over `w` from `i` (inside a document, not after a backslash) as far
/// as whole blocks allow.
pub(super) fn skip(c: &mut Cursor, w: &[u8], mut i: usize) -> Stop {
    while let Some(block) = w.get(i..i + 64) {
        let Ok(block) = <&[u8; 64]>::try_from(block) else {
            break;
        };
        let m = classify(block);
        if m.backslash != 0 {
            return Stop::Backslash(i);
        }
        // A bracket is never a quote, so the parity up to it is the parity before it.
        let quotes_before = prefix_xor(m.quote);
        let in_str = if *c.in_str {
            !quotes_before
        } else {
            quotes_before
        };
        let mut brackets = (m.open | m.close) & !in_str;
        while brackets != 0 {
            let j = brackets.trailing_zeros();
            let bit = 1u64 << j;
            if m.open & bit != 0 {
                *c.depth += 1;
            } else if *c.depth == c.end_depth + 1 {
                newlines(c, m.newline & (bit - 1), i);
                *c.in_str = false;
                return Stop::DocEnd(i + j as usize);
            } else {
                *c.depth -= 1;
            }
            brackets &= brackets - 1;
        }
        newlines(c, m.newline, i);
        *c.in_str ^= quotes_before >> 63 == 1;
        i += 64;
    }
    Stop::Short(i)
}

/// Counts the newlines of `mask` (bits of the block at `at`).
#[inline(always)]
fn newlines(c: &mut Cursor, mask: u64, at: usize) {
    if mask != 0 {
        *c.line += mask.count_ones() as usize;
        let last = 63 - mask.leading_zeros() as usize;
        *c.line_start = c.base + (at + last) as u64 + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_xor_is_the_running_parity() {
        let x = 0x8000_0100_1001_0092u64;
        let p = prefix_xor(x);
        for j in 0..64 {
            let upto = if j == 63 {
                u64::MAX
            } else {
                (1u64 << (j + 1)) - 1
            };
            let parity = u64::from((x & upto).count_ones() % 2);
            assert_eq!((p >> j) & 1, parity, "bit {j}");
        }
    }

    fn run(text: &str, depth: u32, end_depth: u32) -> (Stop, u32, bool, usize, u64) {
        let (mut d, mut s, mut l, mut ls) = (depth, false, 1usize, 0u64);
        let mut c = Cursor {
            depth: &mut d,
            in_str: &mut s,
            line: &mut l,
            line_start: &mut ls,
            base: 1000,
            end_depth,
        };
        let stop = skip(&mut c, text.as_bytes(), 0);
        (stop, d, s, l, ls)
    }

    #[test]
    fn brackets_in_strings_are_not_counted_and_the_end_is_found() {
        // Inside a document at depth 2, after its `{`.
        let body = format!(
            "\"a\": \"}}]]\", \"b\": [1, {{}}],\n \"c\": \"{}\"}}",
            "x".repeat(40)
        );
        let text = format!("{body}{}", " ".repeat(64));
        let (stop, depth, in_str, line, line_start) = run(&text, 2, 1);
        let Stop::DocEnd(at) = stop else {
            panic!("the document's end is found")
        };
        assert_eq!(at, body.len() - 1);
        assert_eq!((depth, in_str, line), (2, false, 2));
        assert_eq!(line_start, 1000 + body.find('\n').unwrap() as u64 + 1);
    }

    #[test]
    fn a_backslash_or_a_short_tail_goes_back_to_the_scanner() {
        let text = format!("{}\\\"{}", "a".repeat(70), "b".repeat(60));
        assert!(matches!(run(&text, 3, 1).0, Stop::Backslash(64)));
        assert!(matches!(run("{}", 3, 1).0, Stop::Short(0)));
    }
}
