//! The Set-of-Mark anchors are placed once, by the visibility stage, under the rules of the
//! Set-of-Mark config the marks are drawn with; `som` and `metavqa` read them and refuse a
//! table made under other rules, so a custom `som.toml` cannot make the two disagree.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::{Command, Output};

fn run(args: &[&OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_drivegen"))
        .env("DRIVEGEN_PROGRESS", "0")
        .args(args)
        .output()
        .unwrap()
}

fn ok(args: &[&OsStr]) {
    let o = run(args);
    assert!(
        o.status.success(),
        "drivegen {args:?}:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The anchors of a table (visibility's or marks.arrow) by annotation id: pixel centre, rule,
/// and for marks.arrow the drawn box.
type Anchors = HashMap<String, ([f64; 2], String, Option<[u32; 4]>)>;

fn anchors(path: &Path, kept_only: bool) -> Anchors {
    let t = super::cli::read_table(path);
    let f = |c: &str, i: usize| -> f64 { t[c][i].parse().unwrap() };
    (0..t["annotation_id"].len())
        .filter(|&i| !kept_only || t["kept"][i] == "true")
        .map(|i| {
            let bbox = t.contains_key("box_x0").then(|| {
                ["box_x0", "box_y0", "box_x1", "box_y1"].map(|c| t[c][i].parse::<u32>().unwrap())
            });
            (
                t["annotation_id"][i].clone(),
                (
                    [f("anchor_x", i), f("anchor_y", i)],
                    t["anchor_rule"][i].clone(),
                    bbox,
                ),
            )
        })
        .collect()
}

#[test]
fn anchors_follow_the_som_config_and_a_table_of_other_rules_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = |s: &str| dir.path().join(s);
    let (src, store) = (p("src"), p("store"));
    let o = |s: &'static str| OsStr::new(s);
    ok(&[
        o("synth"),
        o("--out"),
        src.as_os_str(),
        o("--scenes"),
        o("1"),
        o("--duration"),
        o("2"),
        o("--no-sweeps"),
        o("--width"),
        o("400"),
        o("--height"),
        o("225"),
    ]);
    ok(&[
        o("ingest"),
        o("--root"),
        src.as_os_str(),
        o("--out"),
        store.as_os_str(),
    ]);
    // Every object is "small" under this config, with a thin ring: each anchor must sit in the
    // 6-px ring outside its drawn box.
    let builtin = include_str!("../../../../configs/som.toml");
    let custom_text = builtin
        .replace(
            "small_object_pixels = 1600",
            "small_object_pixels = 100000000",
        )
        .replace("ring_px = 20", "ring_px = 6");
    assert_ne!(custom_text, builtin);
    let custom = p("som.toml");
    std::fs::write(&custom, custom_text).unwrap();
    let vis = |out: &Path, som: Option<&Path>| {
        let mut a: Vec<OsString> = ["visibility", "--device", "cpu", "--store"]
            .map(OsString::from)
            .to_vec();
        a.extend([store.clone().into(), "--out".into(), out.into()]);
        if let Some(s) = som {
            a.extend(["--som-config".into(), s.into()]);
        }
        let refs: Vec<&OsStr> = a.iter().map(OsString::as_os_str).collect();
        ok(&refs);
    };
    let (vis_builtin, vis_custom) = (p("vis_builtin.arrow"), p("vis_custom.arrow"));
    vis(&vis_builtin, None);
    vis(&vis_custom, Some(&custom));
    let som = |table: &Path, out: &str| {
        run(&[
            o("som"),
            o("--device"),
            o("cpu"),
            o("--no-images"),
            o("--store"),
            store.as_os_str(),
            o("--visibility"),
            table.as_os_str(),
            o("--out"),
            p(out).as_os_str(),
            o("--config"),
            custom.as_os_str(),
        ])
    };
    // The built-in table under the custom config: refused, saying how to make a matching one.
    let refused = som(&vis_builtin, "som_refused");
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("vis_builtin.arrow") && err.contains("--som-config"),
        "{err}"
    );
    let mv = run(&[
        o("metavqa"),
        o("--device"),
        o("cpu"),
        o("--no-images"),
        o("--store"),
        store.as_os_str(),
        o("--visibility"),
        vis_builtin.as_os_str(),
        o("--out"),
        p("metavqa_refused").as_os_str(),
        o("--som-config"),
        custom.as_os_str(),
    ]);
    assert_eq!(mv.status.code(), Some(2), "{mv:?}");
    // The matching table: som's marks carry the table's anchors, every one in its ring.
    let done = som(&vis_custom, "som");
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let table = anchors(&vis_custom, true);
    let marks = anchors(&p("som").join("marks.arrow"), false);
    assert!(!marks.is_empty());
    let mut rings = 0;
    for (ann, ([x, y], rule, bbox)) in &marks {
        let (t_xy, t_rule, _) = &table[ann];
        assert_eq!((&[*x, *y], rule), (t_xy, t_rule), "{ann}");
        let [x0, y0, x1, y1] = bbox.expect("marks.arrow has the drawn box");
        let (px, py) = (*x - 0.5, *y - 0.5);
        let inside = |m: f64| {
            px >= f64::from(x0) - m
                && px < f64::from(x1) + m
                && py >= f64::from(y0) - m
                && py < f64::from(y1) + m
        };
        if rule == "ring" {
            rings += 1;
            assert!(!inside(0.0) && inside(6.0), "{ann}: {px},{py} vs {bbox:?}");
        } else {
            assert_eq!(rule, "fallback", "{ann}: every object is small here");
        }
    }
    assert!(rings > 0);
    // Under the built-in rules the same table has interior anchors (large objects).
    assert!(anchors(&vis_builtin, true)
        .values()
        .any(|(_, r, _)| r == "interior"));
}
