//! Savitzky–Golay: exact reproduction of polynomials (property tests) and equality with
//! `scipy.signal.savgol_filter`, computed by scipy at test time, for every edge mode.

use crate::common::oracle;

use std::io::Write;
use std::process::{Command, Stdio};

use drivegen::egomotion::savgol::{savgol_coeffs, savgol_filter, EdgeMode, SavGol};
use drivegen::qa::record::SplitMix64;
use proptest::prelude::*;

/// The `deriv`-th derivative at `t` of the polynomial Σ c_k t^k.
fn poly_deriv(c: &[f64], deriv: usize, t: f64) -> f64 {
    let mut acc = 0.0;
    for (k, ck) in c.iter().enumerate().skip(deriv) {
        let falling: f64 = (0..deriv).map(|j| (k - j) as f64).product();
        acc += ck * falling * t.powi((k - deriv) as i32);
    }
    acc
}

fn mode_strategy() -> impl Strategy<Value = EdgeMode> {
    prop::sample::select(EdgeMode::ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    /// A polynomial of degree ≤ polyorder comes out unchanged (derivative 0) or exactly
    /// differentiated: everywhere in `interp` mode, and in the interior for every mode.
    #[test]
    fn reproduces_polynomials(
        half in 0usize..8,
        order_frac in 0.0f64..1.0,
        extra in 0usize..20,
        deriv_pick in 0usize..4,
        delta in 0.05f64..2.0,
        mode in mode_strategy(),
        coeffs in prop::collection::vec(-2.0f64..2.0, 8),
    ) {
        let window = 2 * half + 1;
        let polyorder = ((window - 1) as f64 * order_frac).floor() as usize;
        let deriv = deriv_pick.min(polyorder + 1);
        let n = window + extra;
        let degree = polyorder.min(coeffs.len() - 1);
        let c = &coeffs[..=degree];
        // Sample on t ∈ [−1, 1] scaled by delta so the values stay O(1).
        let t0 = -((n - 1) as f64) * delta / 2.0;
        let t: Vec<f64> = (0..n).map(|i| t0 + i as f64 * delta).collect();
        let x: Vec<f64> = t.iter().map(|&ti| poly_deriv(c, 0, ti / (n as f64 * delta))).collect();
        let f = SavGol::new(window, polyorder, deriv, delta, mode, 0.0).unwrap();
        let y = f.apply(&x).unwrap();
        let scale = (n as f64 * delta).powi(-(deriv as i32));
        let range = if mode == EdgeMode::Interp { 0..n } else { half..n - half };
        for i in range {
            let want = poly_deriv(c, deriv, t[i] / (n as f64 * delta)) * scale;
            let tol = 1e-9 * (1.0 + want.abs()) * (1.0 + scale);
            prop_assert!((y[i] - want).abs() <= tol,
                "window {window} order {polyorder} deriv {deriv} mode {mode:?} i {i}: {} vs {want}", y[i]);
        }
    }

    /// Above the polynomial order every derivative is zero, as in scipy.
    #[test]
    fn derivative_above_order_is_zero(half in 1usize..6, extra in 0usize..5) {
        let window = 2 * half + 1;
        let c = savgol_coeffs(window, 1, 2, 1.0, half).unwrap();
        prop_assert!(c.iter().all(|v| *v == 0.0));
        let x: Vec<f64> = (0..window + extra).map(|i| (i as f64).sin()).collect();
        let y = savgol_filter(&x, window, 1, 2, 1.0, EdgeMode::Mirror, 0.0).unwrap();
        prop_assert!(y.iter().all(|v| *v == 0.0));
    }
}

struct Case {
    x: Vec<f64>,
    window: usize,
    polyorder: usize,
    deriv: usize,
    delta: f64,
    mode: EdgeMode,
    cval: f64,
}

/// Random cases covering every mode, windows wider than the signal (non-interp modes) and
/// every derivative up to polyorder + 1. Windows stay ≤ 31 and orders ≤ 6: beyond that
/// scipy's own weights (an unscaled Vandermonde least-squares solve) lose digits, which
/// `coefficients_match_exact_arithmetic` shows for wide windows and high orders.
fn cases() -> Vec<Case> {
    let mut rng = SplitMix64::new(20240607);
    let mut unit = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let mut out = Vec::new();
    for mode in EdgeMode::ALL {
        for k in 0..120 {
            let half = (unit() * if k % 10 == 0 { 16.0 } else { 6.0 }) as usize;
            let window = 2 * half + 1;
            let polyorder = ((window as f64) * unit())
                .floor()
                .min((window - 1) as f64)
                .min(6.0) as usize;
            let deriv = ((polyorder + 2) as f64 * unit()) as usize;
            let min_len = if mode == EdgeMode::Interp { window } else { 1 };
            let n = min_len + (unit() * 40.0) as usize;
            let x: Vec<f64> = (0..n)
                .map(|_| (unit() - 0.5) * 10.0_f64.powf(unit() * 4.0 - 1.0))
                .collect();
            out.push(Case {
                x,
                window,
                polyorder,
                deriv,
                delta: 0.05 + unit() * 2.0,
                mode,
                cval: (unit() - 0.5) * 4.0,
            });
        }
        // The benchmark's own setting on a 31-sample clip.
        out.push(Case {
            x: (0..31).map(|_| unit() * 15.0).collect(),
            window: 5,
            polyorder: 2,
            deriv: 0,
            delta: 0.1,
            mode,
            cval: 0.0,
        });
    }
    out
}

/// Runs tests/oracles/savgol.py on a request.
fn run_oracle(request: &serde_json::Value) -> Option<serde_json::Value> {
    let python = oracle::python("oracles")?;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/oracles/savgol.py");
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "oracle failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn equals_scipy_for_every_mode() {
    let cases = cases();
    let json: Vec<serde_json::Value> = cases
        .iter()
        .map(|c| {
            serde_json::json!({
                "x": c.x, "window": c.window, "polyorder": c.polyorder, "deriv": c.deriv,
                "delta": c.delta, "mode": c.mode.name(), "cval": c.cval,
            })
        })
        .collect();
    let Some(reply) = run_oracle(&serde_json::json!({ "filter": json })) else {
        return;
    };
    let want: Vec<Vec<f64>> = serde_json::from_value(reply["filter"].clone()).unwrap();
    assert_eq!(want.len(), cases.len());
    let mut worst = 0.0f64;
    for (c, w) in cases.iter().zip(&want) {
        let y = savgol_filter(
            &c.x,
            c.window,
            c.polyorder,
            c.deriv,
            c.delta,
            c.mode,
            c.cval,
        )
        .unwrap();
        assert_eq!(y.len(), w.len());
        // Relative to the output's magnitude (max norm): single outputs that cancel to ~0
        // carry the rounding of the large terms that cancelled, in scipy as in ours. A signal
        // whose exact output is 0 (e.g. a derivative of a mirrored 2-sample signal) is compared
        // against 1e-3 of the largest output the weights could give, Σ|w|·max|x|.
        let weights = savgol_coeffs(c.window, c.polyorder, c.deriv, c.delta, c.window / 2).unwrap();
        let reach = weights.iter().map(|v| v.abs()).sum::<f64>()
            * c.x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let scale = w
            .iter()
            .fold(0.0f64, |m, v| m.max(v.abs()))
            .max(1e-3 * reach)
            .max(f64::MIN_POSITIVE);
        let diff = y
            .iter()
            .zip(w)
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        let rel = diff / scale;
        worst = worst.max(rel);
        assert!(
            rel <= 1e-9,
            "mode {} window {} order {} deriv {} delta {} n {}: ours {y:?}, scipy {w:?} (rel {rel:e})",
            c.mode.name(),
            c.window,
            c.polyorder,
            c.deriv,
            c.delta,
            c.x.len()
        );
    }
    eprintln!(
        "{} cases, worst relative difference from scipy {worst:e}",
        cases.len()
    );
}

/// Our weights against exact rational arithmetic, including wide windows and high orders
/// where scipy's are less accurate.
#[test]
fn coefficients_match_exact_arithmetic() {
    let specs: Vec<(usize, usize, usize, f64, usize)> = vec![
        (5, 2, 0, 1.0, 2),
        (5, 2, 1, 0.1, 0),
        (7, 3, 2, 0.5, 6),
        (21, 5, 3, 0.25, 10),
        (31, 6, 1, 0.1, 3),
        (49, 9, 9, 0.39348774599044306, 24),
        (49, 9, 4, 1.0, 0),
        (61, 12, 0, 1.0, 30),
        (61, 12, 6, 0.2, 59),
    ];
    let req: Vec<serde_json::Value> = specs
        .iter()
        .map(|&(window, polyorder, deriv, delta, pos)| {
            serde_json::json!({"window": window, "polyorder": polyorder, "deriv": deriv, "delta": delta, "pos": pos})
        })
        .collect();
    let Some(reply) = run_oracle(&serde_json::json!({ "coeffs": req })) else {
        return;
    };
    let exact: Vec<Vec<f64>> = serde_json::from_value(reply["coeffs_exact"].clone()).unwrap();
    let scipy: Vec<Vec<f64>> = serde_json::from_value(reply["coeffs_scipy"].clone()).unwrap();
    for (((window, polyorder, deriv, delta, pos), e), s) in specs.iter().zip(&exact).zip(&scipy) {
        let ours = savgol_coeffs(*window, *polyorder, *deriv, *delta, *pos).unwrap();
        let norm = e.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let err = |v: &[f64]| {
            v.iter()
                .zip(e)
                .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()))
                / norm
        };
        let (ours_err, scipy_err) = (err(&ours), err(s));
        eprintln!("window {window} order {polyorder} deriv {deriv} pos {pos}: ours {ours_err:.1e}, scipy {scipy_err:.1e}");
        assert!(
            ours_err <= 1e-11,
            "window {window} order {polyorder} deriv {deriv}: {ours_err:e}"
        );
    }
}
