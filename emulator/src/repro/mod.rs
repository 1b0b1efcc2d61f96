//! `mcsim repro`: a paper's evaluation regenerated, with a verdict per claim.
//!
//! A paper plugs in as a [`Paper`]: it lists its figures ([`FigureSpec`]:
//! every point is one closure run once per random draw) and, from the
//! measured [`Results`], decides its [`Claim`]s. The framework runs every
//! point of every figure on `jobs` threads ([`run_figures`]), then writes
//! per figure the CSV of every sample, the means with 95% confidence
//! intervals, an SVG plot ([`plot`]) and per paper the markdown table of
//! claims ([`report`]).
//!
//! Random topologies and destination sets are drawn per draw from the
//! draw's index (and a base seed), so a run repeats exactly; two base seeds
//! give two independent samples of the same experiment.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

pub mod paper000;
pub mod paper001;
pub mod paper002;
pub mod paper003;
pub mod paper004;
pub mod plot;
pub mod report;
pub mod run;
pub mod runs;
pub mod stats;

pub use stats::Stat;

/// How big a grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grid {
    /// The reduced grid: every qualitative verdict decided, in minutes in a
    /// debug build.
    Quick,
    /// The full grid.
    Full,
}

/// A claim's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// What we measured agrees with the paper.
    Holds,
    /// What we measured disagrees.
    Differs,
    /// The simulator lacks what the claim needs (the string says what).
    NotCheckable(String),
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Holds => write!(f, "holds"),
            Verdict::Differs => write!(f, "differs"),
            Verdict::NotCheckable(what) => write!(f, "not checkable (needs {what})"),
        }
    }
}

impl Verdict {
    /// `Holds` when `ok`, else `Differs`.
    pub fn from_bool(ok: bool) -> Verdict {
        if ok {
            Verdict::Holds
        } else {
            Verdict::Differs
        }
    }
}

/// One claim of a paper and what we found.
#[derive(Debug, Clone)]
pub struct Claim {
    /// Its number in the paper's list.
    pub id: u32,
    /// The paper's statement or number.
    pub statement: String,
    /// Where the paper says it, as a citation.
    pub source: String,
    /// What we measured.
    pub ours: String,
    /// The verdict.
    pub verdict: Verdict,
    /// One line of why.
    pub why: String,
    /// The figures it rests on (ids).
    pub figures: Vec<String>,
}

impl Claim {
    /// A claim whose figures this run did not measure (not checkable until
    /// [`Claim::decide`] decides it).
    pub fn pending(id: u32, statement: &str, source: String, figures: &[&str]) -> Claim {
        Claim {
            id,
            statement: statement.into(),
            source,
            ours: String::new(),
            verdict: Verdict::NotCheckable("its figures, which this run did not measure".into()),
            why: "the figures it rests on were not measured in this run".into(),
            figures: figures.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// Decide: what we measured, whether it agrees, and why.
    pub fn decide(mut self, ours: String, ok: bool, why: &str) -> Claim {
        self.ours = ours;
        self.verdict = Verdict::from_bool(ok);
        self.why = why.into();
        self
    }
}

/// One measurement: run once per draw; returns the value plotted.
pub type Job = Box<dyn Fn(u32) -> Result<f64, String> + Send + Sync>;

/// One point of a figure: a series at an x, measured over `draws` draws.
pub struct PointSpec {
    /// The series (legend entry).
    pub series: String,
    /// The x value.
    pub x: f64,
    /// How many draws.
    pub draws: u32,
    /// The measurement.
    pub job: Job,
}

/// What a figure plots (shared by the spec and the result).
#[derive(Debug, Clone)]
pub struct FigureMeta {
    /// File stem, e.g. `fig19-r0.5`.
    pub id: String,
    /// The title (the paper's figure and panel).
    pub title: String,
    /// The x axis, with its unit.
    pub x_label: String,
    /// The y axis, with its unit.
    pub y_label: String,
}

/// The points of a grid: for every series `(legend, key)` and every x of
/// `xs`, `draws` draws of `job(key, x, draw)`.
pub fn sweep<S, K, F>(series: &[(S, K)], xs: &[usize], draws: u32, job: F) -> Vec<PointSpec>
where
    S: AsRef<str>,
    K: Copy + Send + Sync + 'static,
    F: Fn(K, usize, u32) -> Result<f64, String> + Clone + Send + Sync + 'static,
{
    let mut points = Vec::with_capacity(series.len() * xs.len());
    for (name, key) in series {
        for &x in xs {
            let (key, job) = (*key, job.clone());
            points.push(PointSpec {
                series: name.as_ref().to_string(),
                x: x as f64,
                draws,
                job: Box::new(move |d| job(key, x, d)),
            });
        }
    }
    points
}

/// A figure to measure.
pub struct FigureSpec {
    /// What it plots.
    pub meta: FigureMeta,
    /// Its points.
    pub points: Vec<PointSpec>,
}

/// One measured sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The series.
    pub series: String,
    /// The x value.
    pub x: f64,
    /// The draw.
    pub draw: u32,
    /// The value.
    pub value: f64,
}

/// A measured figure.
#[derive(Debug, Clone)]
pub struct FigureResult {
    /// What it plots.
    pub meta: FigureMeta,
    /// Every sample, in the spec's order.
    pub samples: Vec<Sample>,
}

impl FigureResult {
    /// The series in first-appearance order.
    pub fn series(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in &self.samples {
            if !out.contains(&s.series) {
                out.push(s.series.clone());
            }
        }
        out
    }

    /// The x values of `series`, ascending.
    pub fn xs(&self, series: &str) -> Vec<f64> {
        let mut xs: Vec<f64> = Vec::new();
        for s in self.samples.iter().filter(|s| s.series == series) {
            if !xs.contains(&s.x) {
                xs.push(s.x);
            }
        }
        xs.sort_by(f64::total_cmp);
        xs
    }

    /// The samples of one point, by draw.
    pub fn values(&self, series: &str, x: f64) -> Vec<f64> {
        self.samples
            .iter()
            .filter(|s| s.series == series && s.x == x)
            .map(|s| s.value)
            .collect()
    }

    /// Mean and confidence interval of one point.
    pub fn stat(&self, series: &str, x: f64) -> Option<Stat> {
        Stat::of(&self.values(series, x))
    }

    /// The mean of one point (NaN if it has no samples).
    pub fn mean(&self, series: &str, x: f64) -> f64 {
        self.stat(series, x).map_or(f64::NAN, |s| s.mean)
    }
}

/// Every measured figure of a run, by id.
#[derive(Debug, Clone, Default)]
pub struct Results {
    /// By id.
    pub figures: BTreeMap<String, FigureResult>,
}

impl Results {
    /// A figure by id.
    pub fn get(&self, id: &str) -> Option<&FigureResult> {
        self.figures.get(id)
    }
}

/// A paper's reproduction.
pub trait Paper: Sync {
    /// The paper's number (`000`).
    fn number(&self) -> &'static str;
    /// Its citation key (`Sivaram 1998`).
    fn key(&self) -> &'static str;
    /// Its title.
    fn title(&self) -> &'static str;
    /// The figures to measure.
    fn figures(&self, grid: Grid) -> Vec<FigureSpec>;
    /// The claims, decided from the results.
    fn claims(&self, results: &Results) -> Vec<Claim>;
    /// Notes for the report: the setup, and where we read the paper
    /// differently (markdown lines).
    fn notes(&self) -> Vec<String>;
}

/// The papers `mcsim repro` knows, with base seed `seed`.
pub fn papers(seed: u64) -> Vec<Box<dyn Paper>> {
    let mut p0 = paper000::Paper000::default();
    p0.params.seed = seed;
    vec![
        Box::new(p0),
        Box::new(paper001::Paper001 { seed }),
        Box::new(paper002::Paper002 { seed }),
        Box::new(paper003::Paper003 {
            seed,
            table1_in_ns: false,
        }),
        Box::new(paper004::Paper004 { seed }),
    ]
}

/// Progress: (points done, points planned).
pub type ProgressCb<'a> = &'a (dyn Fn(u64, u64) + Sync);

/// Count the runs `figs` plan (one per point and draw).
pub fn planned(figs: &[FigureSpec]) -> u64 {
    figs.iter()
        .flat_map(|f| &f.points)
        .map(|p| u64::from(p.draws))
        .sum()
}

/// Run every point of `figs` for each of its draws on `jobs` threads,
/// reporting progress after each run.
///
/// # Errors
/// The first measurement that failed, with its figure, series, x and draw.
pub fn run_figures(
    figs: Vec<FigureSpec>,
    jobs: usize,
    progress: ProgressCb<'_>,
) -> Result<Results, String> {
    // One task per (figure, point, draw).
    let mut tasks: Vec<(usize, usize, u32)> = Vec::new();
    for (fi, f) in figs.iter().enumerate() {
        for (pi, p) in f.points.iter().enumerate() {
            tasks.extend((0..p.draws).map(|d| (fi, pi, d)));
        }
    }
    let total = tasks.len() as u64;
    let next = AtomicUsize::new(0);
    let done = AtomicU64::new(0);
    let out: Mutex<Vec<Option<f64>>> = Mutex::new(vec![None; tasks.len()]);
    let failed: Mutex<Option<String>> = Mutex::new(None);
    progress(0, total);
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(fi, pi, d)) = tasks.get(i) else {
                    break;
                };
                if failed.lock().is_ok_and(|f| f.is_some()) {
                    break;
                }
                let (f, p) = (&figs[fi], &figs[fi].points[pi]);
                match (p.job)(d) {
                    Ok(v) => {
                        if let Ok(mut o) = out.lock() {
                            o[i] = Some(v);
                        }
                    }
                    Err(e) => {
                        if let Ok(mut g) = failed.lock() {
                            g.get_or_insert(format!(
                                "{} / {} / x = {} / draw {d}: {e}",
                                f.meta.id, p.series, p.x
                            ));
                        }
                        break;
                    }
                }
                let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                progress(n, total);
            });
        }
    });
    if let Some(e) = failed.into_inner().map_err(|e| e.to_string())? {
        return Err(e);
    }
    let out = out.into_inner().map_err(|e| e.to_string())?;
    let mut results = Results::default();
    let mut k = 0;
    for f in figs {
        let mut samples = Vec::new();
        for p in &f.points {
            for d in 0..p.draws {
                let value = out[k].ok_or("a point was not measured")?;
                k += 1;
                samples.push(Sample {
                    series: p.series.clone(),
                    x: p.x,
                    draw: d,
                    value,
                });
            }
        }
        let meta = f.meta;
        results.figures.insert(
            meta.id.clone(),
            FigureResult {
                meta: meta.clone(),
                samples,
            },
        );
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runner_measures_every_draw_in_order() {
        let fig = FigureSpec {
            meta: FigureMeta {
                id: "t".into(),
                title: "t".into(),
                x_label: "x".into(),
                y_label: "y".into(),
            },
            points: (0..3)
                .map(|x| PointSpec {
                    series: "a".into(),
                    x: f64::from(x),
                    draws: 4,
                    job: Box::new(move |d| Ok(f64::from(x * 10) + f64::from(d))),
                })
                .collect(),
        };
        let last = AtomicU64::new(0);
        let r = run_figures(vec![fig], 3, &|d, t| {
            assert_eq!(t, 12);
            last.fetch_max(d, Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(last.load(Ordering::Relaxed), 12);
        let f = r.get("t").unwrap();
        assert_eq!(f.values("a", 2.0), vec![20.0, 21.0, 22.0, 23.0]);
        assert_eq!(f.mean("a", 1.0), 11.5);
        assert_eq!(f.xs("a"), vec![0.0, 1.0, 2.0]);
    }

    #[test]
    fn runner_reports_the_failing_point() {
        let fig = FigureSpec {
            meta: FigureMeta {
                id: "f".into(),
                title: "f".into(),
                x_label: "x".into(),
                y_label: "y".into(),
            },
            points: vec![PointSpec {
                series: "s".into(),
                x: 1.0,
                draws: 2,
                job: Box::new(|d| if d == 1 { Err("boom".into()) } else { Ok(0.0) }),
            }],
        };
        let e = run_figures(vec![fig], 1, &|_, _| {}).unwrap_err();
        assert!(e.contains("f / s / x = 1 / draw 1: boom"), "{e}");
    }
}
