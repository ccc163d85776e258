//! Helpers shared by plugins (upstream `plugins/helper`).

use crate::framework::plugin::{MAX_NODE_SCORE, NodeScore};

/// Upstream `DefaultNormalizeScore`: scale to [0, max] by the highest score; when all are
/// zero, leave them (or set all to `max` when reversed). Integer arithmetic as upstream.
pub fn default_normalize_score(max: i64, reverse: bool, scores: &mut [NodeScore]) {
    let max_count = scores.iter().map(|s| s.score).fold(0, i64::max);
    if max_count == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| s.score = max);
        }
        return;
    }
    for s in scores.iter_mut() {
        let mut v = max * s.score / max_count;
        if reverse {
            v = max - v;
        }
        s.score = v;
    }
}

pub fn default_normalize(scores: &mut [NodeScore], reverse: bool) {
    default_normalize_score(MAX_NODE_SCORE, reverse, scores)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(v: &[i64], reverse: bool) -> Vec<i64> {
        let mut s: Vec<NodeScore> = v
            .iter()
            .map(|&score| NodeScore { name: "n", score })
            .collect();
        default_normalize(&mut s, reverse);
        s.iter().map(|s| s.score).collect()
    }

    #[test]
    fn normalizes() {
        assert_eq!(run(&[1, 2, 3], false), [33, 66, 100]);
        assert_eq!(run(&[1, 2, 3], true), [67, 34, 0]);
        assert_eq!(run(&[0, 0], false), [0, 0]);
        assert_eq!(run(&[0, 0], true), [100, 100]);
    }
}
