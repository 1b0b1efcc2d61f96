//! The one plotting module (plotters, SVG only), shared by `mcsim repro` and
//! the benchmark harnesses: line charts of means with 95% confidence bars,
//! axes with their units, and a legend.

use plotters::prelude::*;

/// One line of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// The legend entry.
    pub name: String,
    /// (x, mean, half-width of the confidence interval), ascending in x.
    pub points: Vec<(f64, f64, f64)>,
}

/// A line chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// The caption.
    pub title: String,
    /// The x axis, with its unit.
    pub x_label: String,
    /// The y axis, with its unit.
    pub y_label: String,
    /// The lines.
    pub lines: Vec<Line>,
    /// Which axes are logarithmic (base 2 for x, base 10 for y).
    pub log: LogAxes,
}

/// Logarithmic axes of a [`Chart`]: x in powers of two (message sizes),
/// y in powers of ten (latencies). Every value on a log axis must be
/// positive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LogAxes {
    /// x on a base-2 log scale.
    pub x: bool,
    /// y on a base-10 log scale.
    pub y: bool,
}

/// A tick label for `v` on an axis: on a log axis `v` is the exponent, so
/// the label is base^v where v is a whole number and empty elsewhere.
fn tick(v: f64, log_base: Option<f64>) -> String {
    match log_base {
        None => short(v),
        Some(b) if (v - v.round()).abs() < 1e-6 => {
            let x = b.powf(v.round());
            if b == 2.0 && x >= 1024.0 {
                let (n, unit) = if x >= 1_048_576.0 {
                    (x / 1_048_576.0, "Mi")
                } else {
                    (x / 1024.0, "Ki")
                };
                format!("{n}{unit}")
            } else {
                format!("{x}")
            }
        }
        Some(_) => String::new(),
    }
}

/// `v` without floating-point noise: at most 9 significant digits, no
/// trailing zeros (0.12000000000000001 is "0.12").
fn short(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{}", if v == 0.0 { 0.0 } else { v });
    }
    let digits = (8 - v.abs().log10().floor() as i32).clamp(0, 17) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The line colours, in legend order (colour-blind-safe, Okabe–Ito).
const COLOURS: [RGBColor; 6] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
];

/// How a line looks past the colours: solid, dashed, dotted.
#[derive(Clone, Copy)]
enum Dash {
    Solid,
    Dashed,
    Dotted,
}

/// Line `i`'s colour and dash: the six colours, then again dashed, then
/// dotted.
fn look(i: usize) -> (RGBColor, Dash) {
    let dash = match (i / COLOURS.len()) % 3 {
        0 => Dash::Solid,
        1 => Dash::Dashed,
        _ => Dash::Dotted,
    };
    (COLOURS[i % COLOURS.len()], dash)
}

/// The looks of every line: in order, except that a line named
/// `"<name> model"` is drawn dashed in the colour of the line `<name>`
/// when there is one (a model beside what it models).
fn looks(lines: &[Line]) -> Vec<(RGBColor, Dash)> {
    let mut out: Vec<(RGBColor, Dash)> = Vec::with_capacity(lines.len());
    let mut next = 0;
    for line in lines {
        let measured = line
            .name
            .strip_suffix(" model")
            .and_then(|m| lines.iter().position(|l| l.name == m));
        match measured {
            Some(j) if j < out.len() => out.push((out[j].0, Dash::Dashed)),
            _ => {
                out.push(look(next));
                next += 1;
            }
        }
    }
    out
}

/// A point's marker: a dot on solid lines, a triangle on dashed, a cross
/// on dotted.
fn marker<'a, C>(at: C, dash: Dash, c: RGBColor) -> DynElement<'static, SVGBackend<'a>, C>
where
    C: Clone + 'static,
{
    match dash {
        Dash::Solid => Circle::new(at, 3, c.filled()).into_dyn(),
        Dash::Dashed => TriangleMarker::new(at, 4, c.filled()).into_dyn(),
        Dash::Dotted => Cross::new(at, 3, c.stroke_width(2)).into_dyn(),
    }
}

/// A range with some room around `lo..hi`.
fn padded(lo: f64, hi: f64, from_zero: bool) -> (f64, f64) {
    let (lo, hi) = if from_zero && lo >= 0.0 {
        (0.0, hi)
    } else {
        (lo, hi)
    };
    let span = (hi - lo).abs().max(hi.abs() * 0.1).max(1e-9);
    let lo = if from_zero && lo == 0.0 {
        0.0
    } else {
        lo - span * 0.05
    };
    (lo, hi + span * 0.08)
}

impl Chart {
    /// Draw the chart as an SVG document of `width × height` pixels.
    ///
    /// # Errors
    /// No point to draw, or a plotters error.
    pub fn svg(&self, width: u32, height: u32) -> Result<String, String> {
        if !(self.log.x || self.log.y) {
            return self.draw(width, height, (None, None));
        }
        // Log axes: draw the logarithms on linear axes, labelled base^v.
        let bad = |what: &str| format!("chart `{}`: {what} on a log axis", self.title);
        let lg = |v: f64, on: bool, base: f64, what: &str| -> Result<f64, String> {
            match (on, v > 0.0 && v.is_finite()) {
                (false, _) => Ok(v),
                (true, true) => Ok(v.log(base)),
                (true, false) => Err(bad(what)),
            }
        };
        let mut c = self.clone();
        for l in &mut c.lines {
            for p in &mut l.points {
                let (x, y, ci) = *p;
                let y2 = lg(y, self.log.y, 10.0, "a value not above 0")?;
                // On a log axis the bar spans log(y + ci) − log(max(y − ci, y/10)),
                // drawn symmetric about log y.
                let half = if self.log.y {
                    ((y + ci).log10() - (y - ci).max(y / 10.0).log10()) / 2.0
                } else {
                    ci
                };
                *p = (lg(x, self.log.x, 2.0, "an x not above 0")?, y2, half);
            }
        }
        c.log = LogAxes::default();
        c.draw(
            width,
            height,
            (self.log.x.then_some(2.0), self.log.y.then_some(10.0)),
        )
    }

    /// Draw on linear axes whose tick labels are base^v where a base is
    /// given.
    fn draw(
        &self,
        width: u32,
        height: u32,
        bases: (Option<f64>, Option<f64>),
    ) -> Result<String, String> {
        let all: Vec<&(f64, f64, f64)> = self.lines.iter().flat_map(|l| &l.points).collect();
        if all.is_empty() {
            return Err(format!("chart `{}` has no points", self.title));
        }
        let fold = |f: fn(f64, f64) -> f64, init: f64, g: &dyn Fn(&(f64, f64, f64)) -> f64| {
            all.iter().map(|p| g(p)).fold(init, f)
        };
        let (x0, x1) = (
            fold(f64::min, f64::INFINITY, &|p| p.0),
            fold(f64::max, f64::NEG_INFINITY, &|p| p.0),
        );
        let (y0, y1) = (
            fold(f64::min, f64::INFINITY, &|p| p.1 - p.2),
            fold(f64::max, f64::NEG_INFINITY, &|p| p.1 + p.2),
        );
        let (x0, x1) = padded(x0, x1, false);
        let (y0, y1) = padded(y0, y1, bases.1.is_none());
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, (width, height)).into_drawing_area();
            let e = |e: &dyn std::fmt::Display| e.to_string();
            root.fill(&WHITE).map_err(|x| e(&x))?;
            let longest = self.lines.iter().map(|l| l.name.chars().count()).max();
            let panel = (56 + 7 * longest.unwrap_or(0) as u32).min(width / 2);
            // The caption spans the whole width, above plot and legend,
            // wrapped at spaces into lines that fit.
            let mut body = root.clone();
            for line in wrap(&self.title, (width as usize).saturating_sub(40) / 10) {
                body = body.titled(&line, ("sans-serif", 20)).map_err(|x| e(&x))?;
            }
            let (plot, legend) = body.split_horizontally(width - panel);
            let mut chart = ChartBuilder::on(&plot)
                .margin(12)
                .x_label_area_size(45)
                .y_label_area_size(70)
                .build_cartesian_2d(x0..x1, y0..y1)
                .map_err(|x| e(&x))?;
            chart
                .configure_mesh()
                .x_desc(&self.x_label)
                .y_desc(&self.y_label)
                .axis_desc_style(("sans-serif", 16))
                .label_style(("sans-serif", 13))
                .light_line_style(WHITE.mix(0.0))
                .x_label_formatter(&|v| tick(*v, bases.0))
                .y_label_formatter(&|v| tick(*v, bases.1))
                .draw()
                .map_err(|x| e(&x))?;
            let looks = looks(&self.lines);
            for (line, &(c, dash)) in self.lines.iter().zip(&looks) {
                let xy: Vec<(f64, f64)> = line.points.iter().map(|p| (p.0, p.1)).collect();
                let stroke = c.stroke_width(2);
                match dash {
                    Dash::Solid => chart.draw_series(LineSeries::new(xy.clone(), stroke)),
                    Dash::Dashed => {
                        chart.draw_series(DashedLineSeries::new(xy.clone(), 8, 5, stroke))
                    }
                    Dash::Dotted => {
                        chart.draw_series(DashedLineSeries::new(xy.clone(), 2, 4, stroke))
                    }
                }
                .map_err(|x| e(&x))?;
                chart
                    .draw_series(xy.iter().map(|&(x, y)| marker((x, y), dash, c)))
                    .map_err(|x| e(&x))?;
                chart
                    .draw_series(line.points.iter().filter(|p| p.2 > 0.0).map(|&(x, y, ci)| {
                        ErrorBar::new_vertical(x, y - ci, y, y + ci, c.stroke_width(1), 6)
                    }))
                    .map_err(|x| e(&x))?;
            }
            // The legend has its own panel right of the plot, so it never
            // hides a curve; past six lines the colours repeat with dashed,
            // then dotted lines and other markers.
            let label = ("sans-serif", 13).into_font();
            for (i, (line, &(c, dash))) in self.lines.iter().zip(&looks).enumerate() {
                let y = 20 + 20 * i as i32;
                let stroke = c.stroke_width(2);
                let sample: Vec<(i32, i32)> = match dash {
                    Dash::Solid => vec![(6, y), (34, y)],
                    Dash::Dashed => vec![(6, y), (15, y), (21, y), (30, y)],
                    Dash::Dotted => vec![
                        (6, y),
                        (8, y),
                        (12, y),
                        (14, y),
                        (18, y),
                        (20, y),
                        (24, y),
                        (26, y),
                        (30, y),
                        (32, y),
                    ],
                };
                for seg in sample.chunks(2) {
                    legend
                        .draw(&PathElement::new(seg.to_vec(), stroke))
                        .map_err(|x| e(&x))?;
                }
                legend.draw(&marker((20, y), dash, c)).map_err(|x| e(&x))?;
                legend
                    .draw(&Text::new(line.name.clone(), (40, y - 7), label.clone()))
                    .map_err(|x| e(&x))?;
            }
            root.present().map_err(|x| e(&x))?;
        }
        Ok(out)
    }
}

/// `text` in lines of at most `max` characters, broken at spaces (a word
/// longer than `max` gets a line of its own).
fn wrap(text: &str, max: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for w in text.split_whitespace() {
        if !cur.is_empty() && cur.chars().count() + 1 + w.chars().count() > max.max(1) {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(w);
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Long captions wrap at spaces; short ones stay one line.
    #[test]
    fn captions_wrap_at_spaces() {
        assert_eq!(wrap("Fig 0", 80), vec!["Fig 0"]);
        assert_eq!(wrap("aa bb cc", 5), vec!["aa bb", "cc"]);
        assert_eq!(wrap("abcdefgh ij", 4), vec!["abcdefgh", "ij"]);
        assert_eq!(wrap("", 10), vec![""]);
    }

    #[test]
    fn an_svg_with_axes_and_legend() {
        let c = Chart {
            title: "Fig 0".into(),
            x_label: "destinations".into(),
            y_label: "latency (µs)".into(),
            lines: vec![
                Line {
                    name: "tree".into(),
                    points: vec![(1.0, 20.0, 0.5), (8.0, 22.0, 0.7)],
                },
                Line {
                    name: "path".into(),
                    points: vec![(1.0, 30.0, 0.0), (8.0, 60.0, 4.0)],
                },
            ],
            log: LogAxes::default(),
        };
        let s = c.svg(640, 400).unwrap();
        assert!(s.starts_with("<svg"), "{}", &s[..40.min(s.len())]);
        for want in ["Fig 0", "destinations", "latency (µs)", "tree", "path"] {
            assert!(s.contains(want), "missing {want}");
        }
        let empty = Chart {
            lines: vec![],
            ..c.clone()
        };
        assert!(empty.svg(100, 100).is_err());
        // Log-log: ticks at powers of two and ten; zero is refused.
        let log = Chart {
            log: LogAxes { x: true, y: true },
            lines: vec![Line {
                name: "bcast".into(),
                points: vec![
                    (8.0, 12.0, 1.0),
                    (4096.0, 30.0, 0.0),
                    (4194304.0, 9000.0, 0.0),
                ],
            }],
            ..c.clone()
        };
        let s = log.svg(640, 400).unwrap();
        // plotters writes a label on its own line.
        for want in ["16", "4Ki", "4Mi", "10", "1000"] {
            assert!(s.contains(&format!("\n{want}\n")), "missing tick {want}");
        }
        let zero = Chart {
            lines: vec![Line {
                name: "z".into(),
                points: vec![(0.0, 1.0, 0.0)],
            }],
            ..log
        };
        assert!(zero.svg(100, 100).unwrap_err().contains("log axis"));
    }

    #[test]
    fn tick_labels() {
        assert_eq!(tick(2.5, None), "2.5");
        assert_eq!(tick(0.12000000000000001, None), "0.12");
        assert_eq!(tick(0.1 + 0.2, None), "0.3");
        assert_eq!(tick(1500.0, None), "1500");
        assert_eq!(tick(0.0005, None), "0.0005");
        assert_eq!(tick(-0.0, None), "0");
        assert_eq!(tick(3.0, Some(2.0)), "8");
        assert_eq!(tick(20.0, Some(2.0)), "1Mi");
        assert_eq!(tick(2.0, Some(10.0)), "100");
        assert_eq!(tick(2.3, Some(10.0)), "");
    }
}
