//! Means and Student-t confidence intervals over draws.

/// Mean and 95% confidence interval of a sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stat {
    /// Samples.
    pub n: usize,
    /// Mean.
    pub mean: f64,
    /// Half-width of the 95% confidence interval of the mean (0 for one
    /// sample).
    pub ci95: f64,
}

/// The 97.5% quantile of Student's t with `df` degrees of freedom.
fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        d if d <= 30 => T[d - 1],
        d if d <= 60 => 2.000,
        d if d <= 120 => 1.980,
        _ => 1.960,
    }
}

impl Stat {
    /// The statistics of `v`; `None` when empty.
    pub fn of(v: &[f64]) -> Option<Stat> {
        if v.is_empty() {
            return None;
        }
        let n = v.len();
        let mean = v.iter().sum::<f64>() / n as f64;
        if n == 1 {
            return Some(Stat { n, mean, ci95: 0.0 });
        }
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        Some(Stat {
            n,
            mean,
            ci95: t975(n - 1) * (var / n as f64).sqrt(),
        })
    }

    /// `mean ± ci95`, with `digits` decimals.
    pub fn show(&self, digits: usize) -> String {
        format!("{:.digits$} ± {:.digits$}", self.mean, self.ci95)
    }
}

/// Paired comparison of `a` and `b` (same draws): the statistics of the
/// differences `a − b`.
pub fn paired(a: &[f64], b: &[f64]) -> Option<Stat> {
    if a.len() != b.len() {
        return None;
    }
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    Stat::of(&d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_interval() {
        let s = Stat::of(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(s.n, 4);
        assert!((s.mean - 2.5).abs() < 1e-12);
        // sd = 1.291, se = 0.6455, t(3) = 3.182
        assert!((s.ci95 - 2.054).abs() < 1e-3, "{s:?}");
        assert_eq!(Stat::of(&[7.0]).unwrap().ci95, 0.0);
        assert!(Stat::of(&[]).is_none());
        let p = paired(&[3.0, 5.0], &[1.0, 2.0]).unwrap();
        assert!((p.mean - 2.5).abs() < 1e-12);
    }
}
