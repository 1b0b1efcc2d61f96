//! k-binomial trees [Sivaram 1998, §4.3.3–4.3.4, Figs 9–10].
//!
//! `n` is always the multicast *set size including the source* (the paper's §4
//! meaning), and `m` the message length in packets.

/// ⌈log2 n⌉ for n ≥ 1 (0 for n ≤ 1).
pub fn ceil_log2(n: usize) -> usize {
    if n <= 1 {
        0
    } else {
        (usize::BITS - (n - 1).leading_zeros()) as usize
    }
}

/// N(s, k) of Lemma 4: the number of nodes (source included) a k-binomial tree
/// covers in `s` steps. N(s, 0) = 1; N(s, k) = 2^s for s ≤ k; otherwise
/// 1 + Σ_{i=1..k} N(s−i, k). Saturates at `u64::MAX` instead of overflowing.
pub fn n_nodes(s: usize, k: usize) -> u64 {
    if k == 0 {
        return 1;
    }
    if k == 1 {
        // Linear chain: N(s, 1) = s + 1 (avoids an O(s) loop per call).
        return (s as u64).saturating_add(1);
    }
    if s <= k {
        return if s >= 64 { u64::MAX } else { 1u64 << s };
    }
    // Iterate upward keeping the last k values: N(t) for t in s-k..s.
    let mut window: std::collections::VecDeque<u64> = (0..=k)
        .map(|t| if t >= 64 { u64::MAX } else { 1u64 << t })
        .collect();
    // window holds N(0..=k); we need N(t) for t = k+1..=s.
    window.pop_front(); // keep exactly the last k values N(1..=k)
    let mut last = *window.back().expect("k >= 1");
    for _t in (k + 1)..=s {
        let sum = window.iter().fold(1u64, |acc, &v| acc.saturating_add(v));
        window.pop_front();
        window.push_back(sum);
        last = sum;
        if sum == u64::MAX {
            return u64::MAX;
        }
    }
    last
}

/// L1(n, k): the minimum number of steps s with N(s, k) ≥ n, i.e. the
/// single-packet completion time of a k-binomial tree on `n` nodes. L1(1, k) = 0.
/// For k = 0 (no children allowed) only n ≤ 1 is coverable; returns `usize::MAX`.
pub fn l1(n: usize, k: usize) -> usize {
    if n <= 1 {
        return 0;
    }
    if k == 0 {
        return usize::MAX;
    }
    if k == 1 {
        return n - 1;
    }
    // While s <= k, N(s, k) = 2^s, so the binomial depth suffices if it is <= k.
    let c = ceil_log2(n);
    if c <= k {
        return c;
    }
    // Here 2^k < n <= usize::MAX, so k < 64. Walk s = k+1, k+2, ... keeping the
    // last k values of N and their sum (u128: k values each < n never overflow).
    let n = n as u128;
    let mut window: std::collections::VecDeque<u128> = (1..=k).map(|t| 1u128 << t).collect();
    let mut sum: u128 = window.iter().sum();
    let mut s = k;
    loop {
        s += 1;
        let next = 1 + sum;
        if next >= n {
            return s;
        }
        let oldest = window.pop_front().expect("window holds k >= 2 values");
        sum = sum - oldest + next;
        window.push_back(next);
    }
}

/// The optimal k of Theorem 3 for a set of `n` nodes (source included) and an
/// `m`-packet message: the k in 1..=⌈log2 n⌉ minimising L1(n,k) + (m−1)·k.
///
/// Ties are broken towards the **smallest** k (the paper leaves this open; a
/// smaller k means fewer copies per NI, hence less NI buffer). Returns 1 for
/// n ≤ 2 and treats m = 0 as m = 1.
pub fn optimal_k(n: usize, m: usize) -> usize {
    let m = m.max(1);
    let kmax = ceil_log2(n).max(1);
    let mut best = (usize::MAX, 1);
    for k in 1..=kmax {
        let cost = l1(n, k).saturating_add((m - 1).saturating_mul(k));
        if cost < best.0 {
            best = (cost, k);
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n_table_matches_reference() {
        // [Sivaram 1998, §4.3.3, Fig 9], table of N(s,k), s = 0..10.
        let rows: [(usize, [u64; 11]); 6] = [
            (1, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
            (2, [1, 2, 4, 7, 12, 20, 33, 54, 88, 143, 232]),
            (3, [1, 2, 4, 8, 15, 28, 52, 96, 177, 326, 600]),
            (4, [1, 2, 4, 8, 16, 31, 60, 116, 224, 432, 833]),
            (5, [1, 2, 4, 8, 16, 32, 63, 124, 244, 480, 944]),
            (6, [1, 2, 4, 8, 16, 32, 64, 127, 252, 500, 992]),
        ];
        for (k, row) in rows {
            for (s, &want) in row.iter().enumerate() {
                assert_eq!(n_nodes(s, k), want, "N({s},{k})");
            }
        }
        assert_eq!(n_nodes(5, 0), 1);
        assert_eq!(n_nodes(200, 3), u64::MAX);
    }

    #[test]
    fn l1_matches_definition() {
        // The fast L1 must equal "min s with N(s,k) >= n" computed naively.
        for k in 1..=10 {
            for n in 1..=2000usize {
                let mut s = 0;
                while n_nodes(s, k) < n as u64 {
                    s += 1;
                }
                assert_eq!(l1(n, k), s, "L1({n},{k})");
            }
        }
        assert_eq!(l1(0, 0), 0);
        assert_eq!(l1(5, 0), usize::MAX);
        assert_eq!(l1(usize::MAX, 64), 64);
        assert_eq!(l1(usize::MAX, 1), usize::MAX - 1);
        assert!(l1(usize::MAX, 2) > 64);
    }

    #[test]
    fn n_nodes_linear_closed_form() {
        for s in 0..100 {
            assert_eq!(n_nodes(s, 1), s as u64 + 1);
        }
        assert_eq!(n_nodes(usize::MAX, 1), u64::MAX);
    }

    #[test]
    fn ceil_log2_values() {
        let v: Vec<usize> = [1, 2, 3, 4, 5, 8, 9, 16, 17]
            .iter()
            .map(|&n| ceil_log2(n))
            .collect();
        assert_eq!(v, vec![0, 1, 2, 2, 3, 3, 4, 4, 5]);
    }
}
