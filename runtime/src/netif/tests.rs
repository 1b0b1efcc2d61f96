//! Unit tests of `netif`: selectors and `pick_bind` on made-up interface
//! lists, and one look at this host's interfaces and routes.

use super::*;

fn ifs() -> Vec<IfAddr> {
    let some = "lo 127.0.0.1, lo ::1, eth0 10.0.0.5, eth0 fd00::5, eth1 10.1.0.7";
    let more = ", docker0 172.17.0.1, ib0 192.168.1.20, wlan0 192.168.2.3";
    let parse = |(n, a): (&str, &str)| IfAddr {
        name: n.into(),
        addr: a.parse().unwrap(),
    };
    let all = format!("{some}{more}");
    let items = all.split(", ").map(|i| i.split_once(' ').unwrap());
    items.map(parse).collect()
}

/// `name addr, name addr, ...` of the selected addresses.
fn selected(sel: &str) -> String {
    let sel: IfSelector = sel.parse().unwrap();
    let ifs = ifs();
    let names: Vec<String> = sel
        .select(&ifs)
        .iter()
        .map(|i| format!("{} {}", i.name, i.addr))
        .collect();
    names.join(", ")
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn names_and_exclusions() {
    // A leading `^` negates the whole list (Open MPI's component lists).
    let rest = "eth0 10.0.0.5, eth0 fd00::5, eth1 10.1.0.7, ib0 192.168.1.20, wlan0 192.168.2.3";
    assert_eq!(selected("^docker0,lo"), rest);
    assert_eq!(selected("^docker0,^lo"), rest);
    // A later `^` excludes its own item.
    assert_eq!(selected("eth0,^10.0.0.5"), "eth0 fd00::5");
    assert_eq!(selected("eth0"), "eth0 10.0.0.5, eth0 fd00::5");
    assert_eq!(selected(" eth1 , ib0 "), "eth1 10.1.0.7, ib0 192.168.1.20");
    assert_eq!(selected("eth"), "");
}

#[test]
fn cidr_blocks() {
    assert_eq!(selected("10.0.0.0/8"), "eth0 10.0.0.5, eth1 10.1.0.7");
    assert_eq!(selected("192.168.1.0/24"), "ib0 192.168.1.20");
    assert_eq!(selected("fd00::/8"), "eth0 fd00::5");
    assert_eq!(selected("10.0.0.5"), "eth0 10.0.0.5");
    assert_eq!(selected("::1"), "lo ::1");
    let all_but_eth1 = selected("^10.1.0.0/16");
    assert_eq!(all_but_eth1.split(", ").count(), 7);
    assert!(!all_but_eth1.contains("eth1"));
    // Include, then exclude.
    assert_eq!(selected("eth0,^10.0.0.5/32"), "eth0 fd00::5");
    let v4 = "eth0 10.0.0.5, eth1 10.1.0.7, wlan0 192.168.2.3";
    assert_eq!(selected("10.0.0.0/8,192.168.0.0/16,^ib0"), v4);
    // /0 is a whole family.
    assert_eq!(selected("0.0.0.0/0").split(", ").count(), 6);
    assert_eq!(selected("::/0"), "lo ::1, eth0 fd00::5");
}

#[test]
fn cidr_arithmetic() {
    let c: Cidr = "10.1.2.3/16".parse().unwrap();
    assert_eq!(c.to_string(), "10.1.0.0/16");
    assert_eq!((c.network(), c.prefix()), (ip("10.1.0.0"), 16));
    assert!(c.contains(&ip("10.1.255.255")));
    assert!(!c.contains(&ip("10.2.0.0")));
    assert!(!c.contains(&ip("::ffff:10.1.0.1")));
    let c: Cidr = "fd00:1::/32".parse().unwrap();
    assert!(c.contains(&ip("fd00:1:ffff::1")));
    assert!(!c.contains(&ip("fd00:2::1")));
    assert_eq!("1.2.3.4".parse::<Cidr>().unwrap().prefix(), 32);
    assert_eq!("::".parse::<Cidr>().unwrap().prefix(), 128);
    assert_eq!(Cidr::new(ip("1.2.3.4"), 33), None);
    assert_eq!(Cidr::new(ip("::"), 129), None);
}

#[test]
fn selector_display_round_trips() {
    let s: IfSelector = "eth0,^docker0, 10.0.0.0/8 ,^fd00::/8".parse().unwrap();
    assert_eq!(s.to_string(), "eth0,10.0.0.0/8,^docker0,^fd00::/8");
    assert_eq!(s.to_string().parse::<IfSelector>().unwrap(), s);
    assert_eq!(s.include().len(), 2);
    assert_eq!(s.exclude()[0], IfRule::Name("docker0".into()));
}

#[test]
fn bad_selectors_name_the_item() {
    let bad = |sel: &str, item: &str, problem: ItemProblem| match sel.parse::<IfSelector>() {
        Err(NetifError::BadItem {
            item: i,
            problem: p,
        }) => {
            assert_eq!((i.as_str(), p), (item, problem), "{sel:?}")
        }
        other => panic!("{sel:?}: {other:?}"),
    };
    bad("eth0,", "", ItemProblem::Empty);
    bad("eth0,,lo", "", ItemProblem::Empty);
    bad("^", "^", ItemProblem::Empty);
    bad("eth0,^^lo", "^^lo", ItemProblem::BadName);
    bad("eth 0", "eth 0", ItemProblem::BadName);
    bad("10.0.0.0/33", "10.0.0.0/33", ItemProblem::BadPrefix(32));
    bad("^10.0.0.0/", "^10.0.0.0/", ItemProblem::BadPrefix(32));
    bad("10.0.0.0/x", "10.0.0.0/x", ItemProblem::BadPrefix(32));
    bad("10.0.0.0/999", "10.0.0.0/999", ItemProblem::BadPrefix(32));
    bad("fd00::/129", "fd00::/129", ItemProblem::BadPrefix(128));
    bad("10.0.0/8", "10.0.0/8", ItemProblem::BadAddress);
    bad("eth0/1", "eth0/1", ItemProblem::BadAddress);
    for empty in ["", " "] {
        let e = empty.parse::<IfSelector>();
        assert!(matches!(e, Err(NetifError::EmptySelector)), "{e:?}");
    }
    let e = "eth0,10.0.0.0/40".parse::<IfSelector>().unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"interface selector item "10.0.0.0/40": the prefix length must be a number from 0 to 32"#
    );
}

#[test]
fn pick_bind_with_a_selector() {
    let ifs = ifs();
    let pick = |sel: &str| pick_bind(Some(&sel.parse().unwrap()), &ifs, None);
    assert_eq!(pick("eth0").unwrap(), ip("10.0.0.5"));
    assert_eq!(pick("fd00::/8").unwrap(), ip("fd00::5"));
    assert_eq!(pick("192.168.0.0/16").unwrap(), ip("192.168.1.20"));
    // Loopback only when nothing else is selected.
    assert_eq!(pick("^docker0").unwrap(), ip("10.0.0.5"));
    assert_eq!(pick("lo,wlan0").unwrap(), ip("192.168.2.3"));
    assert_eq!(pick("lo").unwrap(), ip("127.0.0.1"));
    assert_eq!(pick("::1").unwrap(), ip("::1"));
    // The selector wins over the route.
    let sel = "ib0".parse().unwrap();
    assert_eq!(
        pick_bind(Some(&sel), &ifs, Some(ip("10.0.0.5"))).unwrap(),
        ip("192.168.1.20")
    );
}

#[test]
fn pick_bind_reports_what_exists() {
    let ifs = ifs();
    let e = pick_bind(Some(&"ib9,^lo".parse().unwrap()), &ifs[..4], None).unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"interface selector "ib9,^lo" matches no address here; interfaces: lo 127.0.0.1 ::1, eth0 10.0.0.5 fd00::5"#
    );
    let e = pick_bind(Some(&"eth0".parse().unwrap()), &[], None).unwrap_err();
    assert!(e.to_string().ends_with("interfaces: none"), "{e}");
}

#[test]
fn pick_bind_without_a_selector() {
    let ifs = ifs();
    let localhost = ip("127.0.0.1");
    assert_eq!(
        pick_bind(None, &ifs, Some(ip("10.1.0.7"))).unwrap(),
        ip("10.1.0.7")
    );
    assert_eq!(
        pick_bind(None, &ifs, Some(ip("fd00::5"))).unwrap(),
        ip("fd00::5")
    );
    for routed in [Some(localhost), Some(ip("::1")), Some(ip("0.0.0.0")), None] {
        assert_eq!(
            pick_bind(None, &ifs, routed).unwrap(),
            localhost,
            "{routed:?}"
        );
    }
    assert_eq!(pick_bind(None, &[], None).unwrap(), localhost);
}

#[test]
fn loopback_addresses() {
    for a in ["127.0.0.1", "127.255.0.9", "::1", "::ffff:127.0.0.1"] {
        assert!(is_loopback(&ip(a)), "{a}");
    }
    for a in ["10.0.0.1", "::", "0.0.0.0", "::ffff:10.0.0.1", "fe80::1"] {
        assert!(!is_loopback(&ip(a)), "{a}");
    }
}

#[test]
fn route_toward_loopback_is_loopback() {
    let localhost = ip("127.0.0.1");
    assert_eq!(route_source(localhost).unwrap(), localhost);
}

#[test]
fn this_host_lists_its_interfaces() {
    let ifs = list_interfaces().unwrap();
    assert!(ifs.iter().all(|i| !i.name.is_empty()));
    assert!(ifs
        .iter()
        .all(|i| !matches!(i.addr, IpAddr::V6(a) if a.segments()[0] & 0xffc0 == 0xfe80)));
}
