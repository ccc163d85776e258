//! Host selection as v1.35 does it: the scored nodes go into a max-heap (Go's
//! `container/heap` algorithm) and the root is taken. Ties are decided by the heap's
//! layout over the feasible-node order, and by a random number only for nodes that
//! extenders scored (kubestep's number is seeded by the pod: `framework::extender::TieBreaker`).

/// A node's total and tie-breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scored {
    pub index: usize,
    pub total: i64,
    pub randomizer: u64,
}

fn less(a: &Scored, b: &Scored) -> bool {
    a.total > b.total || (a.total == b.total && a.randomizer > b.randomizer)
}

/// Go's `down`: true when the element moved.
fn down(h: &mut [Scored], i0: usize, n: usize) -> bool {
    let mut i = i0;
    loop {
        let j1 = 2 * i + 1;
        if j1 >= n {
            break;
        }
        let mut j = j1;
        let j2 = j1 + 1;
        if j2 < n && less(&h[j2], &h[j1]) {
            j = j2;
        }
        if !less(&h[j], &h[i]) {
            break;
        }
        h.swap(i, j);
        i = j;
    }
    i > i0
}

fn up(h: &mut [Scored], mut j: usize) {
    while j > 0 {
        let i = (j - 1) / 2;
        if !less(&h[j], &h[i]) {
            break;
        }
        h.swap(i, j);
        j = i;
    }
}

/// Go's `heap.Remove`: takes out the element at `i`, keeping the heap a heap.
pub fn heap_remove(h: &mut Vec<Scored>, i: usize) -> Option<Scored> {
    let n = h.len().checked_sub(1)?;
    if i > n {
        return None;
    }
    if n != i {
        h.swap(i, n);
        if !down(h, i, n) {
            up(h, i);
        }
    }
    h.pop()
}

/// Go's `heap.Init`.
pub fn heap_init(h: &mut [Scored]) {
    let n = h.len();
    if n < 2 {
        return;
    }
    for i in (0..n / 2).rev() {
        down(h, i, n);
    }
}

/// Go's `heap.Pop` on an initialised heap.
pub fn heap_pop(h: &mut Vec<Scored>) -> Option<Scored> {
    let n = h.len();
    if n == 0 {
        return None;
    }
    h.swap(0, n - 1);
    down(h, 0, n - 1);
    h.pop()
}

/// The node kube-scheduler v1.35 picks, as an index into `scored`'s order: the root of
/// the heap after `heap.Init` (Pop returns it).
///
/// The root is found without moving anything: when `down(i)` runs, position `i` still
/// holds its own element and each child holds the root of its already-built subtree, so a
/// subtree's root is its own element unless a child root is strictly better, the left
/// child winning unless the right is strictly better than it. One pass from the last
/// parent to the top computes that (tests check it against the heap itself).
pub fn select_host(scored: &[Scored]) -> Option<usize> {
    let n = scored.len();
    if n == 0 {
        return None;
    }
    // winner[i]: position of the element at the root of i's subtree (leaves: themselves).
    let mut winner: Vec<usize> = (0..n).collect();
    for i in (0..n / 2).rev() {
        let (left, right) = (2 * i + 1, 2 * i + 2);
        let mut child = winner[left];
        if right < n && less(&scored[winner[right]], &scored[child]) {
            child = winner[right];
        }
        if less(&scored[child], &scored[i]) {
            winner[i] = child;
        }
    }
    Some(scored[winner[0]].index)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(totals: &[i64]) -> Vec<Scored> {
        totals
            .iter()
            .enumerate()
            .map(|(index, &total)| Scored {
                index,
                total,
                randomizer: 0,
            })
            .collect()
    }

    #[test]
    fn removing_anywhere_keeps_the_heap_a_heap() {
        let totals = [5, 9, 1, 9, 7, 3, 8, 2, 6];
        for i in 0..totals.len() {
            let mut h = s(&totals);
            heap_init(&mut h);
            let gone = heap_remove(&mut h, i).unwrap();
            let mut popped = Vec::new();
            while let Some(x) = heap_pop(&mut h) {
                popped.push(x.total);
            }
            let mut want: Vec<i64> = totals.to_vec();
            want.remove(want.iter().position(|&t| t == gone.total).unwrap());
            want.sort_by(|a, b| b.cmp(a));
            assert_eq!(popped, want, "removed position {i}");
        }
    }

    #[test]
    fn picks_the_maximum() {
        assert_eq!(select_host(&s(&[1, 5, 3])), Some(1));
        assert_eq!(select_host(&s(&[])), None);
    }

    #[test]
    fn equal_totals_pick_the_first() {
        assert_eq!(select_host(&s(&[7, 7, 7, 7])), Some(0));
    }

    #[test]
    fn ties_follow_heap_layout_not_order() {
        // Init sifts index 1 (total 9) above index 0; the tie with index 3 stays below.
        assert_eq!(select_host(&s(&[1, 9, 2, 9])), Some(1));
        // Index 0 sinks: its children are 2 (9) and 3 (9): Less(j2, j1) is false on a tie,
        // so the left child 1 wins the swap.
        assert_eq!(select_host(&s(&[0, 9, 9])), Some(1));
    }

    /// The shortcut agrees with building the heap and popping, ties and all.
    #[test]
    fn root_shortcut_matches_the_heap() {
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        };
        for len in 0..200 {
            for _ in 0..20 {
                let scored: Vec<Scored> = (0..len)
                    .map(|index| Scored {
                        index,
                        total: (next() % 4) as i64,
                        randomizer: next() % 3,
                    })
                    .collect();
                let mut h = scored.clone();
                heap_init(&mut h);
                assert_eq!(select_host(&scored), heap_pop(&mut h).map(|s| s.index));
            }
        }
    }

    #[test]
    fn pop_order_is_descending() {
        let mut h = s(&[3, 1, 4, 1, 5, 9, 2, 6]);
        heap_init(&mut h);
        let mut out = Vec::new();
        while let Some(x) = heap_pop(&mut h) {
            out.push(x.total);
        }
        assert_eq!(out, [9, 6, 5, 4, 3, 2, 1, 1]);
    }
}
