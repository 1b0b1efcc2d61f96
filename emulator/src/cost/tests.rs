//! The cost model's parser, presets and checks.

use super::*;

#[test]
fn irregular_defaults_match_paper_6_2() {
    let c = FabricCostModel::default();
    assert_eq!((c.t_hs, c.t_hr, c.t_ns, c.t_nr), (1000, 1000, 1000, 1000));
    assert_eq!(
        (c.packet_flits, c.vc_buf_flits, c.flit_bytes),
        (128, 640, 1)
    );
    assert_eq!(c.cycle_ns, 5.0);
    // 128 B at 266 MB/s = 481 ns = 96.2 cycles -> 97.
    assert_eq!(c.dma_cycles(), 97);
    assert_eq!(c.t_r(), 2);
    assert_eq!(c.serialization(), 128);
}

#[test]
fn r_sets_ni_overheads_from_t_hs() {
    let mut c = FabricCostModel::default();
    for (r, want) in [("0.5", 2000), ("1", 1000), ("2", 500), ("5", 200)] {
        c.set("r", r).unwrap();
        assert_eq!((c.t_ns, c.t_nr), (want, want), "R = {r}");
    }
}

#[test]
fn thesis_presets() {
    let h = FabricCostModel::preset("high-startup").unwrap();
    assert_eq!((h.t_ns, h.t_nr, h.cycle_ns), (190, 150, 500.0));
    let l = FabricCostModel::preset("low-startup").unwrap();
    assert_eq!((l.t_ns, l.t_nr), (20, 16));
    let n = FabricCostModel::preset("ncube2").unwrap();
    assert_eq!((n.t_ns, n.t_nr), (214, 160));
}

#[test]
fn config_round_trips_and_reports_bad_lines() {
    let mut c = FabricCostModel::preset("low-startup").unwrap();
    c.set("num_vcs", "4").unwrap();
    c.set("dateline", "off").unwrap();
    let text = c.to_string();
    let mut d = FabricCostModel::default();
    d.parse_config(&text).unwrap();
    d.preset = c.preset.clone();
    assert_eq!(c, d);
    let mut e = FabricCostModel::default();
    let err = e
        .parse_config("// booksim style\nnum_vcs = 4;\n\nbogus = 3;\n")
        .unwrap_err();
    assert!(matches!(err, CostError::UnknownKey { ref key, .. } if key == "bogus"));
    let err = e.parse_config("num_vcs = 2\nnum_vcs 4\n").unwrap_err();
    assert!(matches!(err, CostError::Syntax { line: 2, .. }));
    let err = e.set("packet_flits", "0").unwrap_err();
    assert!(matches!(err, CostError::BadValue { .. }));
    let err = e.set("t_hs", "-3").unwrap_err();
    assert!(matches!(err, CostError::BadValue { .. }));
    assert!(e.set_pair("link_delay=4").is_ok());
    assert_eq!(e.link_delay, 4);
    assert!(e.set_pair("link_delay").is_err());
    assert!(FabricCostModel::preset("nope").is_err());
}

#[test]
fn validate_refuses_wormhole_buffers() {
    let mut c = FabricCostModel::default();
    c.set("vc_buf_flits", "64").unwrap();
    assert!(c.validate().is_err());
}

/// `switching`: vct by default, wormhole by key, config line or
/// `--set`, printed and read back; wormhole takes buffers of any size
/// from one flit, VCT still refuses buffers smaller than a packet.
#[test]
fn switching_knob_round_trips_and_validates() {
    let mut c = FabricCostModel::default();
    assert_eq!(c.switching, Switching::Vct);
    assert!(c.to_string().contains("switching = vct;"));
    c.parse_config("switching = wormhole; vc_buf_flits = 1;")
        .unwrap();
    assert_eq!(c.switching, Switching::Wormhole);
    assert!(c.validate().is_ok());
    let mut d = FabricCostModel::default();
    d.parse_config(&c.to_string()).unwrap();
    assert_eq!(c, d);
    let mut e = FabricCostModel::default();
    e.set_pair("switching=wormhole").unwrap();
    e.set_pair("vc_buf_flits=7").unwrap();
    assert!(e.validate().is_ok());
    e.set_pair("switching=vct").unwrap();
    assert!(e.validate().is_err());
    assert!(e.set("vc_buf_flits", "0").is_err());
    assert!(matches!(
        e.set("switching", "store-and-forward"),
        Err(CostError::BadValue { .. })
    ));
    // The simulator's parameters take wormhole; the socket fabric's
    // (VCT only) refuse it.
    use crate::switch::SwitchParams;
    e.set_pair("switching=wormhole").unwrap();
    let p = SwitchParams::from_cost_any(&e, 1).unwrap();
    assert!(p.wormhole && p.need() == 7);
    assert!(SwitchParams::from_cost(&e, 1).is_err());
}
