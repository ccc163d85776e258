//! Fitting text into columns: every cut is marked with `…`, so no name is ever shown
//! shorter than it is without saying so. Names lose their middle (both ends tell pods
//! and nodes apart: `ml/llm-f…worker-0`) or the part a whole list shares
//! (`ip-10-0-1-21…` for `*.ec2.internal`), and never so that two names of a list read
//! alike (`Elider`: `ip-10-0-0-1.…` beside `ip-10-0-0-10.…`). Also the short forms of
//! durations and the fuzzy match every filter uses.

use std::ops::Range;
use std::time::Duration;

use ratatui::style::Style;
use ratatui::text::{Line, Span};

/// Cuts `s` to `w` characters, marking the cut with `…`.
pub fn fit(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        return s.to_string();
    }
    if w == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(w - 1).collect();
    out.push('…');
    out
}

/// `s` padded or cut to exactly `w` characters.
pub fn pad(s: &str, w: usize) -> String {
    let f = fit(s, w);
    let n = f.chars().count();
    format!("{f}{}", " ".repeat(w.saturating_sub(n)))
}

/// `s` in at most `w` characters, losing its middle: the start says where a name
/// belongs (a namespace, a node pool), the end which one it is. Alone it can make two
/// names of a list read alike: a list's names go through [`Elider`].
pub fn elide(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n <= w {
        return s.to_string();
    }
    if w < 6 {
        return fit(s, w);
    }
    // The end is the more telling half (replica suffixes, ordinals).
    let tail = w / 2;
    let head = w - 1 - tail;
    let mut out: String = s.chars().take(head).collect();
    out.push('…');
    out.extend(s.chars().skip(n - tail));
    out
}

/// What every name of a list starts and ends with, cut at a separator so what is left
/// reads as a name: `ip-10-0-1-21.ec2.internal` and `ip-10-0-3-47.ec2.internal` share
/// the suffix `.ec2.internal`. Shortening drops these first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shared {
    /// Characters every name starts with.
    pub prefix: usize,
    /// Characters every name ends with.
    pub suffix: usize,
}

const SEPARATORS: [char; 4] = ['.', '-', '/', '_'];

impl Shared {
    /// The shared start and end of `names` (nothing with fewer than two names).
    pub fn of<'a>(names: impl IntoIterator<Item = &'a str>) -> Shared {
        let mut it = names.into_iter();
        let Some(first) = it.next() else {
            return Shared::default();
        };
        let len = first.chars().count();
        let (mut pre, mut suf, mut shortest, mut others) = (len, len, len, false);
        for name in it {
            pre = pre.min(
                first
                    .chars()
                    .zip(name.chars())
                    .take_while(|(a, b)| a == b)
                    .count(),
            );
            suf = suf.min(
                first
                    .chars()
                    .rev()
                    .zip(name.chars().rev())
                    .take_while(|(a, b)| a == b)
                    .count(),
            );
            shortest = shortest.min(name.chars().count());
            others = true;
        }
        if !others {
            return Shared::default();
        }
        // Back to a separator inside the shared part: `ip-10-0-` not `ip-10-0-1`.
        let chars: Vec<char> = first.chars().collect();
        while pre > 0 && !SEPARATORS.contains(&chars[pre - 1]) {
            pre -= 1;
        }
        while suf > 0 && !SEPARATORS.contains(&chars[len - suf]) {
            suf -= 1;
        }
        // Something must remain of the shortest name.
        if pre + suf >= shortest {
            return Shared::default();
        }
        Shared {
            prefix: pre,
            suffix: suf,
        }
    }
}

/// The names of one list (a column's nodes or pods), to shorten each to a width without
/// two of them reading alike. A name that does not fit loses the end every name shares
/// (`ip-10-0-1-21…` for `*.ec2.internal`, more of it as the width allows), else its
/// middle (`ml/llm-f…worker-0`); and the cut is moved so that what is kept before the
/// `…` (or after it) belongs to this name alone: no other name of the list starts (or
/// ends) with it. `ip-10-0-0-1…` could be `ip-10-0-0-10…`
/// too, so beside `ip-10-0-0-10` it is `ip-10-0-0-1.…`. Only a width too narrow for
/// any such cut (a handful of characters) gives a best effort.
#[derive(Debug, Clone, Default)]
pub struct Elider {
    shared: Shared,
    /// The distinct names, sorted, each with how much of it tells it apart.
    alone: Vec<Alone>,
}

/// One name and the fewest characters of its start (`head`), and of its end (`tail`),
/// that no other name of the list has; 0 when nothing else is in the list.
#[derive(Debug, Clone)]
struct Alone {
    name: Box<str>,
    head: usize,
    tail: usize,
}

impl Elider {
    /// Sorts the names twice (by start, by end) to find each one's nearest neighbours:
    /// build it when the list changes, not per frame.
    pub fn of<'a>(names: impl IntoIterator<Item = &'a str>) -> Elider {
        let mut list: Vec<&str> = names.into_iter().collect();
        list.sort_unstable();
        list.dedup();
        let shared = Shared::of(list.iter().copied());
        let mut alone: Vec<Alone> = list
            .iter()
            .map(|n| Alone {
                name: (*n).into(),
                head: 0,
                tail: 0,
            })
            .collect();
        // The longest start a name shares with any other is the one it shares with a
        // neighbour in sorted order; the same for ends, sorted by their reversal.
        for i in 1..list.len() {
            let common = common_len(list[i - 1].chars(), list[i].chars()) + 1;
            alone[i - 1].head = alone[i - 1].head.max(common);
            alone[i].head = alone[i].head.max(common);
        }
        let mut by_end: Vec<usize> = (0..list.len()).collect();
        by_end.sort_unstable_by(|&a, &b| list[a].chars().rev().cmp(list[b].chars().rev()));
        for pair in by_end.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let common = common_len(list[a].chars().rev(), list[b].chars().rev()) + 1;
            alone[a].tail = alone[a].tail.max(common);
            alone[b].tail = alone[b].tail.max(common);
        }
        Elider { shared, alone }
    }

    /// The fewest characters of `name`'s start and end that tell it apart (0, 0 for a
    /// name not in the list: nothing to tell it from).
    fn alone(&self, name: &str) -> (usize, usize) {
        match self.alone.binary_search_by(|a| (*a.name).cmp(name)) {
            Ok(i) => (self.alone[i].head, self.alone[i].tail),
            Err(_) => (0, 0),
        }
    }

    /// `name` in at most `w` characters: whole if it fits, else cut as the type says.
    pub fn shorten(&self, name: &str, w: usize) -> String {
        let chars: Vec<char> = name.chars().collect();
        let n = chars.len();
        if n <= w {
            return name.to_string();
        }
        if w < 2 {
            return fit(name, w);
        }
        let cut = |head: usize, tail: usize| -> String {
            let mut out: String = chars[..head].iter().collect();
            out.push('…');
            out.extend(&chars[n - tail..]);
            out
        };
        let (need_head, need_tail) = self.alone(name);
        let (pre, suf) = if self.shared.prefix + self.shared.suffix < n {
            (self.shared.prefix, self.shared.suffix)
        } else {
            (0, 0)
        };
        // The end all share is cut first: the start kept is long enough to be this
        // name's alone, and then as long as the width allows, cut before a separator
        // (`ip-10-0-1-21.ec2…`) or else after one (`ip-10-0-0-1.…`) where it can.
        if suf > 0 {
            let least = (n - suf).max(need_head);
            if least < w {
                let most = w - 1;
                let sep = |i: usize| SEPARATORS.contains(&chars[i]);
                let head = (least..=most)
                    .rev()
                    .find(|&h| sep(h))
                    .or_else(|| (least.max(1)..=most).rev().find(|&h| sep(h - 1)))
                    .unwrap_or(most);
                return cut(head, 0);
            }
        }
        // The middle, the cut moved the least that keeps a start or an end of its own.
        let room = w - 1;
        let (head, tail) = if w < 6 {
            (room, 0)
        } else {
            (room - w / 2, w / 2)
        };
        if head >= need_head || tail >= need_tail {
            return cut(head, tail);
        }
        let by_head = (need_head <= room).then(|| (need_head, room - need_head));
        let by_tail = (need_tail <= room).then(|| (room - need_tail, need_tail));
        let moved = |(h, _): (usize, usize)| h.abs_diff(head);
        match (by_head, by_tail) {
            (Some(a), Some(b)) => {
                let (h, t) = if moved(a) <= moved(b) { a } else { b };
                return cut(h, t);
            }
            (Some((h, t)), None) | (None, Some((h, t))) => return cut(h, t),
            (None, None) => {}
        }
        // Too narrow to keep a start or an end of its own: what is left once the shared
        // start and end go is still this name's alone (the names differ there).
        if pre > 0 && suf > 0 {
            let core: String = chars[pre..n - suf].iter().collect();
            if core.chars().count() + 2 <= w {
                return format!("…{core}…");
            }
        }
        cut(head, tail)
    }

    /// `shorten` padded to exactly `w` characters.
    pub fn pad(&self, name: &str, w: usize) -> String {
        let f = self.shorten(name, w);
        let n = f.chars().count();
        format!("{f}{}", " ".repeat(w.saturating_sub(n)))
    }
}

/// How many items two sequences begin with alike.
fn common_len<T: PartialEq>(a: impl Iterator<Item = T>, b: impl Iterator<Item = T>) -> usize {
    a.zip(b).take_while(|(x, y)| x == y).count()
}

/// Words of `s` in lines of at most `w` characters (a word longer than `w` is cut).
pub fn wrap(s: &str, w: usize) -> Vec<String> {
    let w = w.max(8);
    let mut out = Vec::new();
    let mut cur = String::new();
    for word in s.split_whitespace() {
        let n = cur.chars().count();
        if n > 0 && n + 1 + word.chars().count() > w {
            out.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() || out.is_empty() {
        out.push(cur);
    }
    out.into_iter().map(|l| fit(&l, w)).collect()
}

/// `s` wrapped to `w` columns with a hanging indent: continuation lines start under the
/// line's own text (its leading spaces, plus `extra`), so a wrapped list item or YAML
/// value stays visibly inside its parent. A word wider than the room is broken across
/// lines (a long image name or node list loses nothing).
pub fn wrap_hanging(s: &str, w: usize, extra: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let (ranges, indent) = hanging_ranges(&chars, w, extra);
    ranges
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let pad = if i == 0 { 0 } else { indent };
            let mut line = " ".repeat(pad);
            line.extend(&chars[r]);
            line
        })
        .collect()
}

/// A styled line wrapped as `wrap_hanging` wraps text, each piece keeping its style.
pub fn wrap_line_hanging(line: Line<'_>, w: usize, extra: usize) -> Vec<Line<'static>> {
    let cells: Vec<(char, Style)> = line
        .spans
        .iter()
        .flat_map(|sp| {
            let style = line.style.patch(sp.style);
            sp.content.chars().map(move |c| (c, style))
        })
        .collect();
    let chars: Vec<char> = cells.iter().map(|(c, _)| *c).collect();
    let (ranges, indent) = hanging_ranges(&chars, w, extra);
    ranges
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let mut spans: Vec<Span<'static>> = Vec::new();
            if i > 0 {
                spans.push(Span::raw(" ".repeat(indent)));
            }
            let mut cur = String::new();
            let mut style = None;
            for &(c, st) in &cells[r] {
                if style.is_some_and(|s| s != st) {
                    spans.push(Span::styled(
                        std::mem::take(&mut cur),
                        style.unwrap_or_default(),
                    ));
                }
                style = Some(st);
                cur.push(c);
            }
            if !cur.is_empty() {
                spans.push(Span::styled(cur, style.unwrap_or_default()));
            }
            Line::from(spans)
        })
        .collect()
}

/// The character ranges of each wrapped line of `chars` in `w` columns, and the indent
/// of the lines after the first (which have `w - indent` columns).
fn hanging_ranges(chars: &[char], w: usize, extra: usize) -> (Vec<Range<usize>>, usize) {
    let w = w.max(8);
    let n = chars.len();
    if n <= w {
        return (std::iter::once(0..n).collect(), 0);
    }
    let lead = chars.iter().take_while(|c| **c == ' ').count();
    // Half the width at most, so deep lines still wrap into something readable.
    let indent = (lead + extra).min(w / 2);
    let mut out = Vec::new();
    let mut pos = 0;
    let mut first = true;
    while pos < n {
        let room = if first { w } else { w - indent };
        if n - pos <= room {
            out.push(pos..n);
            break;
        }
        // The last space within reach (one just past the room ends the line exactly),
        // past the line's own indentation.
        let floor = if first { lead } else { pos };
        let brk = (pos + 1..=pos + room)
            .rev()
            .find(|&k| chars[k] == ' ' && k > floor);
        match brk {
            Some(k) => {
                out.push(pos..k);
                pos = k;
                while pos < n && chars[pos] == ' ' {
                    pos += 1;
                }
            }
            None => {
                out.push(pos..pos + room);
                pos += room;
            }
        }
        first = false;
    }
    (out, indent)
}

/// A duration in a few characters: `1.5s`, `2m05s`, `1h01m`.
pub fn short_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}.{}s", s, d.subsec_millis() / 100)
    }
}

/// Case-insensitive subsequence match: `chk` matches `shop/checkout`.
pub fn fuzzy(needle: &str, hay: &str) -> bool {
    let mut h = hay.chars().flat_map(char::to_lowercase);
    needle
        .chars()
        .flat_map(char::to_lowercase)
        .all(|c| h.any(|x| x == c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elide_keeps_both_ends_and_marks_the_cut() {
        assert_eq!(elide("ml/llm-finetune-worker-0", 16), "ml/llm-…worker-0");
        assert_eq!(elide("short", 16), "short");
        assert_eq!(elide("abcdefgh", 4), "abc…");
        assert_eq!(elide("ml/llm-finetune-worker-0", 16).chars().count(), 16);
    }

    #[test]
    fn shared_suffix_goes_first_for_nodes() {
        let names = ["ip-10-0-1-21.ec2.internal", "ip-10-0-3-47.ec2.internal"];
        let s = Shared::of(names);
        assert_eq!(s.suffix, ".ec2.internal".len());
        assert_eq!(s.prefix, "ip-10-0-".len());
        let e = Elider::of(names);
        assert_eq!(e.shorten(names[0], 15), "ip-10-0-1-21…");
        assert_eq!(e.shorten(names[0], 17), "ip-10-0-1-21.ec2…");
        assert_eq!(e.shorten(names[0], 40), names[0]);
        // Too narrow even without the suffix: the shared start goes too.
        assert_eq!(e.shorten(names[0], 7), "…1-21…");
    }

    #[test]
    fn a_shared_start_goes_with_the_middle() {
        let names = [
            "gke-prod-default-pool-3f2a-x1",
            "gke-prod-default-pool-9c1b-y2",
        ];
        let s = Shared::of(names);
        assert_eq!(s.suffix, 0);
        assert_eq!(Elider::of(names).shorten(names[0], 12), "gke-p…f2a-x1");
    }

    #[test]
    fn nothing_shared_with_one_name_or_none() {
        assert_eq!(Shared::of(["a.b.c"]), Shared::default());
        assert_eq!(Shared::of(Vec::<&str>::new()), Shared::default());
        assert_eq!(Elider::of(["same", "same"]).shorten("same", 2), "s…");
        // A name the list does not hold is cut in its middle.
        assert_eq!(
            Elider::default().shorten("ml/llm-finetune-worker-0", 16),
            "ml/llm-…worker-0"
        );
    }

    /// Whether `name` could be what `shown` stands for: its pieces in order, each `…`
    /// one character or more.
    fn could_be(shown: &str, name: &str) -> bool {
        let pieces: Vec<&str> = shown.split('…').collect();
        if pieces.len() == 1 {
            return shown == name;
        }
        let (first, last) = (pieces[0], pieces[pieces.len() - 1]);
        if !name.starts_with(first) || !name.ends_with(last) {
            return false;
        }
        // Leftmost placement of each middle piece, a gap of one at least before it.
        let end = name.len() - last.len();
        let mut at = first.len();
        for p in &pieces[1..pieces.len() - 1] {
            let from = at + 1;
            match name.get(from..end).and_then(|rest| rest.find(p)) {
                Some(i) => at = from + i + p.len(),
                None => return false,
            }
        }
        at < end
    }

    #[test]
    fn could_be_reads_the_ellipsis_as_one_character_or_more() {
        assert!(could_be("ip-10-0-0-1…", "ip-10-0-0-10.x"));
        assert!(could_be("ip-10-0-0-1…", "ip-10-0-0-1.x"));
        assert!(!could_be("ip-10-0-0-1.…", "ip-10-0-0-10.x"));
        assert!(could_be("…0-1…", "ip-10-0-0-1.x"));
        assert!(!could_be("ab…", "ab"));
        assert!(could_be("a…b", "axb") && !could_be("a…b", "ab"));
    }

    /// The case: on a production-shaped cluster, `ip-10-0-0-1…` beside
    /// `ip-10-0-0-10…` and `ip-10-0-0-100…` left a reader guessing.
    #[test]
    fn cut_names_never_read_as_another() {
        use kubestep_engine::testing::cluster_dump::node_name;
        let nodes: Vec<String> = (0..2000).map(node_name).collect();
        let pods: Vec<String> = (0..300)
            .map(|i| format!("payments/api-7d9f6c8b5-{:05}", i * 37 % 1000))
            .chain((0..40).map(|i| format!("ml/llm-finetune-worker-{i}")))
            .collect();
        for list in [&nodes, &pods] {
            let e = Elider::of(list.iter().map(String::as_str));
            for w in [10, 11, 12, 13, 14, 15, 16, 20, 26, 32, 44] {
                let shown: Vec<String> = list.iter().map(|n| e.shorten(n, w)).collect();
                let mut distinct = shown.clone();
                distinct.sort();
                distinct.dedup();
                assert_eq!(distinct.len(), list.len(), "two names alike at {w}");
                for (name, s) in list.iter().zip(&shown) {
                    assert!(s.chars().count() <= w, "{s} wider than {w}");
                    assert!(could_be(s, name), "{s} is not {name}");
                }
                // From the width a start or end of its own fits, no name reads as another.
                if w < 14 {
                    continue;
                }
                for (name, s) in list.iter().zip(&shown) {
                    let other = list.iter().find(|o| *o != name && could_be(s, o));
                    assert!(other.is_none(), "{s} ({name}) reads as {other:?} at {w}");
                }
            }
        }
        let e = Elider::of(nodes.iter().map(String::as_str));
        assert_eq!(e.shorten(&nodes[1], 14), "ip-10-0-0-1.…");
        assert_eq!(e.shorten(&nodes[10], 14), "ip-10-0-0-10.…");
        assert_eq!(e.shorten(&nodes[100], 14), "ip-10-0-0-100…");
        // Room to spare shows more, cut where a word of the shared end ends.
        assert_eq!(e.shorten(&nodes[1], 26), "ip-10-0-0-1.eu-west-1…");
    }

    #[test]
    fn the_middle_cut_moves_to_what_tells_names_apart() {
        let names = [
            "team/web-a-frontend",
            "team/web-b-frontend",
            "team/api-c-backend",
        ];
        // Cut in the middle alone, two would read `team/…ontend`.
        assert_eq!(elide(names[0], 12), elide(names[1], 12));
        let e = Elider::of(names);
        assert_eq!(e.shorten(names[0], 12), "t…a-frontend");
        assert_eq!(e.shorten(names[1], 12), "t…b-frontend");
        // Where the middle cut keeps an end of its own, it stays.
        let e = Elider::of(["ml/llm-finetune-worker-0", "ml/llm-finetune-worker-1"]);
        assert_eq!(
            e.shorten("ml/llm-finetune-worker-0", 16),
            "ml/llm-…worker-0"
        );
    }

    #[test]
    fn hanging_wrap_indents_continuations_and_loses_no_text() {
        let s = "    Insufficient cpu — 2: ip-10-0-2-34.ec2.internal, ip-10-0-3-47.ec2.internal";
        let lines = wrap_hanging(s, 40, 2);
        assert!(lines.len() > 1);
        for l in &lines[1..] {
            assert!(l.starts_with("      "), "{l:?}");
        }
        for l in &lines {
            assert!(l.chars().count() <= 40, "{l:?}");
        }
        let joined: String = lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ");
        assert_eq!(joined, s.trim());
        let long = format!("  image: {}", "x".repeat(100));
        let lines = wrap_hanging(&long, 30, 2);
        let chars: usize = lines.iter().map(|l| l.trim().chars().count()).sum();
        assert_eq!(chars, "image:".len() + 100);
        assert_eq!(wrap_hanging("fits", 30, 2), vec!["fits".to_string()]);
    }

    #[test]
    fn styled_lines_wrap_like_text_and_keep_styles() {
        use ratatui::style::Modifier;
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let line = Line::from(vec![
            Span::styled("  key: ", bold),
            Span::raw("a value long enough to wrap over the edge of a narrow pane"),
        ]);
        let plain: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        let lines = wrap_line_hanging(line, 24, 2);
        let texts: Vec<String> = lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert_eq!(texts, wrap_hanging(&plain, 24, 2));
        assert_eq!(lines[0].spans[0].style, bold);
        assert!(lines[1].spans.iter().all(|s| s.style != bold));
    }

    #[test]
    fn fuzzy_matching() {
        assert!(fuzzy("chk", "shop/checkout-1"));
        assert!(fuzzy("", "x"));
        assert!(!fuzzy("zz", "shop/checkout"));
        assert!(fuzzy("SHOP", "shop/x"));
    }

    #[test]
    fn durations() {
        assert_eq!(short_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(short_duration(Duration::from_secs(125)), "2m05s");
        assert_eq!(short_duration(Duration::from_secs(3700)), "1h01m");
    }
}
