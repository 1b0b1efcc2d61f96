//! `mcsim plot`: a CSV of points to an SVG (the benchmark harnesses' plots),
//! with log axes, and clear errors for bad input.

mod common;
use common::mcsim;

fn plot(csv: &str, extra: &[&str]) -> (Option<i32>, String, Option<String>) {
    let dir =
        std::env::temp_dir().join(format!("mcsim-plot-{}-{}", std::process::id(), extra.len()));
    std::fs::create_dir_all(&dir).unwrap();
    let (input, out) = (dir.join("points.csv"), dir.join("chart.svg"));
    std::fs::write(&input, csv).unwrap();
    let (i, o) = (input.to_str().unwrap(), out.to_str().unwrap());
    let mut args = vec!["plot", "--csv", i, "--out", o];
    args.extend_from_slice(extra);
    let (code, _, err) = mcsim(&args);
    let svg = std::fs::read_to_string(&out).ok();
    let _ = std::fs::remove_dir_all(&dir);
    (code, err, svg)
}

#[test]
fn draws_a_log_log_latency_chart() {
    let csv = "series,x,y\nmcast, 4 ranks,1,9.5\nmcast, 4 ranks,4096,14\nmcast, 4 ranks,4194304,2100\n\
               Open MPI vader, 4 ranks,1,1.2\nOpen MPI vader, 4 ranks,4096,3\nOpen MPI vader, 4 ranks,4194304,900\n";
    let (code, err, svg) = plot(
        csv,
        &[
            "--log-x",
            "--log-y",
            "--title",
            "Broadcast latency",
            "--x-label",
            "message size (bytes)",
            "--y-label",
            "latency (µs)",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let svg = svg.unwrap();
    for want in [
        "<svg",
        "Broadcast latency",
        "message size (bytes)",
        "latency (µs)",
        "mcast, 4 ranks",
        "Open MPI vader, 4 ranks",
    ] {
        assert!(svg.contains(want), "missing {want}");
    }
    // Ticks at powers of two and ten (plotters puts a label on its own line).
    for tick in ["32", "1Ki", "1Mi", "10", "1000"] {
        assert!(svg.contains(&format!("\n{tick}\n")), "missing tick {tick}");
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let (code, err, svg) = plot("a,b\n1,2\n", &[]);
    assert_eq!(code, Some(2));
    assert!(err.contains("header"), "{err}");
    assert!(svg.is_none());
    let (code, err, _) = plot("series,x,y\ns,0,1\n", &["--log-x"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("log axis"), "{err}");
    let (code, err, _) = plot("series,x,y\n", &[]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no points"), "{err}");
}
