//! The SIG metrics (`docs/sigbench.md` §3.2–§3.4): MLSM (multi-level spatial matching: P, R,
//! F1, AssA over thresholds α = 1..n), SRGS (graph edit distance similarity, S and WS) and SRD
//! (step distances of relation labels: MAE, MSE, Acc). Every weight is in `configs/sig.toml`
//! `[metrics]`; node matching is a Hungarian assignment (O(n³)).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::Path;

use arrow::array::{Array, StringArray};
use arrow::ipc::reader::FileReader;
use serde::Serialize;
use serde_json::Value;

use crate::sig::config::{Metrics, SigConfig};
use crate::sig::grid::{directional, directional_steps, proximal_steps};
use crate::{Error, Result};

/// A vehicle node of a SIG.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub key: String,
    pub kind: Option<String>,
    pub order: Option<u32>,
    pub colour: Option<String>,
    pub pos: [f64; 2],
}

/// A SIG as the metrics see it: the self cell and the vehicles.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    pub self_pos: [f64; 2],
    pub vehicles: Vec<Node>,
}

/// Splits `"<colour> <type> <order>"` (colour optional, possibly several words).
pub fn parse_key(key: &str) -> (Option<String>, Option<String>, Option<u32>) {
    let toks: Vec<&str> = key.split_whitespace().collect();
    let order = toks.last().and_then(|t| t.parse::<u32>().ok());
    let rest = if order.is_some() {
        &toks[..toks.len() - 1]
    } else {
        &toks[..]
    };
    let kind = rest.last().map(|s| s.to_ascii_lowercase());
    let colour = (rest.len() > 1).then(|| rest[..rest.len() - 1].join(" ").to_ascii_lowercase());
    (colour, kind, order)
}

fn point(v: &Value) -> Option<[f64; 2]> {
    let a = v.as_array()?;
    Some([a.first()?.as_f64()?, a.get(1)?.as_f64()?])
}

/// Reads a SIG JSON object (`vehicles` and `self`; lanes, signs and lights are not scored).
pub fn parse_sig(v: &Value) -> std::result::Result<Grid, String> {
    let self_pos = v.get("self").and_then(point).ok_or("no \"self\": [x, y]")?;
    let mut vehicles = Vec::new();
    if let Some(m) = v.get("vehicles") {
        let m = m.as_object().ok_or("\"vehicles\" is not an object")?;
        for (k, p) in m {
            let pos = point(p).ok_or_else(|| format!("vehicle {k:?}: not [x, y]"))?;
            let (colour, kind, order) = parse_key(k);
            vehicles.push(Node {
                key: k.clone(),
                kind,
                order,
                colour,
                pos,
            });
        }
    }
    Ok(Grid { self_pos, vehicles })
}

/// Minimum-cost assignment of the rows of `cost` (n × m) to distinct columns, size min(n, m):
/// `Some(col)` per row, or `None` for rows left over when n > m.
pub fn hungarian(cost: &[Vec<f64>]) -> Vec<Option<usize>> {
    let n = cost.len();
    let m = cost.first().map_or(0, Vec::len);
    if n == 0 || m == 0 {
        return vec![None; n];
    }
    if n > m {
        let t: Vec<Vec<f64>> = (0..m)
            .map(|j| (0..n).map(|i| cost[i][j]).collect())
            .collect();
        let cols = hungarian(&t);
        let mut out = vec![None; n];
        for (j, i) in cols.iter().enumerate() {
            if let Some(i) = i {
                out[*i] = Some(j);
            }
        }
        return out;
    }
    // Potentials method, rows 1..=n, columns 1..=m (0 is the virtual start).
    let inf = f64::INFINITY;
    let (mut u, mut v) = (vec![0.0; n + 1], vec![0.0; m + 1]);
    let (mut p, mut way) = (vec![0usize; m + 1], vec![0usize; m + 1]);
    for i in 1..=n {
        p[0] = i;
        let mut j0 = 0;
        let mut minv = vec![inf; m + 1];
        let mut used = vec![false; m + 1];
        loop {
            used[j0] = true;
            let i0 = p[j0];
            let (mut delta, mut j1) = (inf, 0);
            for j in 1..=m {
                if !used[j] {
                    let cur = cost[i0 - 1][j - 1] - u[i0] - v[j];
                    if cur < minv[j] {
                        minv[j] = cur;
                        way[j] = j0;
                    }
                    if minv[j] < delta {
                        delta = minv[j];
                        j1 = j;
                    }
                }
            }
            for j in 0..=m {
                if used[j] {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
            if p[j0] == 0 {
                break;
            }
        }
        loop {
            let j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
            if j0 == 0 {
                break;
            }
        }
    }
    let mut out = vec![None; n];
    for j in 1..=m {
        if p[j] != 0 {
            out[p[j] - 1] = Some(j - 1);
        }
    }
    out
}

fn dist(a: [f64; 2], b: [f64; 2]) -> f64 {
    (a[0] - b[0]).hypot(a[1] - b[1])
}

/// The prediction shifted so that its self coincides with the truth's.
pub(crate) fn align(truth: &Grid, pred: &Grid) -> Grid {
    let (dx, dy) = (
        truth.self_pos[0] - pred.self_pos[0],
        truth.self_pos[1] - pred.self_pos[1],
    );
    Grid {
        self_pos: truth.self_pos,
        vehicles: pred
            .vehicles
            .iter()
            .map(|n| Node {
                pos: [n.pos[0] + dx, n.pos[1] + dy],
                ..n.clone()
            })
            .collect(),
    }
}

/// P, R, F1, AssA of one level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Prf {
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    pub assa: f64,
}

/// MLSM per level (1: type, 2: type + order, 3: type + order + colour) and their mean.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Mlsm {
    pub type_level: Prf,
    pub order_level: Prf,
    pub colour_level: Prf,
    pub mean: Prf,
}

fn f1(p: f64, r: f64) -> f64 {
    if p + r > 0.0 {
        2.0 * p * r / (p + r)
    } else {
        0.0
    }
}

/// MLSM of one image: align, match vehicles by cost d·ω_c·ω_o·ω_t (ω = `omega_match` for a
/// matching attribute, 1 otherwise; unknown colours match each other), then per α = 1..=n count
/// matched pairs within α whose attributes agree at the level. P, R and AssA are averaged over
/// α; F1 comes from the averaged P and R. Two empty grids score 1.
pub fn mlsm(m: &Metrics, truth: &Grid, pred: &Grid) -> Mlsm {
    let pred = align(truth, pred);
    let (g, p) = (&truth.vehicles, &pred.vehicles);
    let w = |same: bool| if same { m.omega_match } else { 1.0 };
    let cost: Vec<Vec<f64>> = g
        .iter()
        .map(|a| {
            p.iter()
                .map(|b| {
                    dist(a.pos, b.pos)
                        * w(a.colour == b.colour)
                        * w(a.order == b.order)
                        * w(a.kind == b.kind)
                })
                .collect()
        })
        .collect();
    let assign = hungarian(&cost);
    let level = |lv: u8| -> Prf {
        let (mut ps, mut rs, mut aas) = (0.0, 0.0, 0.0);
        for alpha in 1..=m.max_alpha {
            let tp = assign
                .iter()
                .enumerate()
                .filter_map(|(i, j)| j.map(|j| (&g[i], &p[j])))
                .filter(|(a, b)| {
                    dist(a.pos, b.pos) <= f64::from(alpha)
                        && a.kind == b.kind
                        && (lv < 2 || a.order == b.order)
                        && (lv < 3 || a.colour == b.colour)
                })
                .count() as f64;
            let (fp, fneg) = (p.len() as f64 - tp, g.len() as f64 - tp);
            let ratio = |num: f64, den: f64| {
                if den > 0.0 {
                    num / den
                } else if g.is_empty() && p.is_empty() {
                    1.0
                } else {
                    0.0
                }
            };
            ps += ratio(tp, tp + fp);
            rs += ratio(tp, tp + fneg);
            aas += ratio(tp, tp + fp + fneg);
        }
        let n = f64::from(m.max_alpha);
        let (pr, rc) = (ps / n, rs / n);
        Prf {
            precision: pr,
            recall: rc,
            f1: f1(pr, rc),
            assa: aas / n,
        }
    };
    let (a, b, c) = (level(1), level(2), level(3));
    let mean = |f: fn(&Prf) -> f64| (f(&a) + f(&b) + f(&c)) / 3.0;
    let (mp, mr) = (mean(|x| x.precision), mean(|x| x.recall));
    Mlsm {
        mean: Prf {
            precision: mp,
            recall: mr,
            f1: f1(mp, mr),
            assa: mean(|x| x.assa),
        },
        type_level: a,
        order_level: b,
        colour_level: c,
    }
}

/// SRGS of one image with node weight γ and edge weight β: S = max(0, 1 − D / D_max).
///
/// Nodes are self (always matched to self) and the vehicles; a vehicle pair costs its grid
/// distance plus `lambda_node` if type, order or colour differ, capped at deletion plus
/// insertion (a pair that costs more is left unmatched). Edges are all ordered node pairs with
/// offset `pos_j − pos_i`; an edge whose ends are both matched costs the length of the offset
/// difference plus `lambda_edge` if the directional label differs (capped likewise); the others
/// are deleted (prediction) or inserted (truth). D_max deletes and inserts everything.
pub fn srgs(m: &Metrics, truth: &Grid, pred: &Grid, gamma: f64, beta: f64) -> f64 {
    let pred = align(truth, pred);
    let (g, p) = (&truth.vehicles, &pred.vehicles);
    let cap_n = m.eta_node_del + m.eta_node_ins;
    let sub = |a: &Node, b: &Node| {
        let attr = a.kind != b.kind || a.order != b.order || a.colour != b.colour;
        dist(a.pos, b.pos) + if attr { m.lambda_node } else { 0.0 }
    };
    let cost: Vec<Vec<f64>> = g
        .iter()
        .map(|a| p.iter().map(|b| sub(a, b).min(cap_n)).collect())
        .collect();
    let assign = hungarian(&cost);
    // Node i of the truth graph (0 = self) → node of the prediction graph.
    let mut map: Vec<Option<usize>> = vec![Some(0)];
    let mut d_n = 0.0;
    let mut pred_used = vec![false; p.len()];
    for (i, j) in assign.iter().enumerate() {
        match j {
            Some(j) if sub(&g[i], &p[*j]) <= cap_n => {
                d_n += sub(&g[i], &p[*j]);
                pred_used[*j] = true;
                map.push(Some(j + 1));
            }
            _ => {
                d_n += m.eta_node_ins;
                map.push(None);
            }
        }
    }
    d_n += m.eta_node_del * pred_used.iter().filter(|u| !**u).count() as f64;
    let gpos: Vec<[f64; 2]> = std::iter::once(truth.self_pos)
        .chain(g.iter().map(|n| n.pos))
        .collect();
    let ppos: Vec<[f64; 2]> = std::iter::once(pred.self_pos)
        .chain(p.iter().map(|n| n.pos))
        .collect();
    let cap_e = m.eta_edge_del + m.eta_edge_ins;
    let mut d_e = 0.0;
    let mut matched_pred_edges = 0usize;
    for i in 0..gpos.len() {
        for j in 0..gpos.len() {
            if i == j {
                continue;
            }
            match (map[i], map[j]) {
                (Some(a), Some(b)) => {
                    let og = [gpos[j][0] - gpos[i][0], gpos[j][1] - gpos[i][1]];
                    let op = [ppos[b][0] - ppos[a][0], ppos[b][1] - ppos[a][1]];
                    let label_differs = directional(-og[0], -og[1]) != directional(-op[0], -op[1]);
                    let c = dist(og, op) + if label_differs { m.lambda_edge } else { 0.0 };
                    d_e += c.min(cap_e);
                    matched_pred_edges += 1;
                }
                _ => d_e += m.eta_edge_ins,
            }
        }
    }
    let pred_edges = ppos.len() * ppos.len().saturating_sub(1);
    d_e += m.eta_edge_del * (pred_edges - matched_pred_edges) as f64;
    let gn = gpos.len() - 1;
    let pn = ppos.len() - 1;
    let d_max = gamma * (m.eta_node_del * pn as f64 + m.eta_node_ins * gn as f64)
        + beta * (m.eta_edge_del * pred_edges as f64 + m.eta_edge_ins * (gpos.len() * gn) as f64);
    if d_max <= 0.0 {
        return 1.0;
    }
    (1.0 - (gamma * d_n + beta * d_e) / d_max).max(0.0)
}

/// SRD over a list of blanks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Srd {
    pub blanks: usize,
    pub mae: f64,
    pub mse: f64,
    pub acc: f64,
}

/// SRD of predicted label ids against the truth's; a missing answer counts as the largest step
/// distance (4 on both scales).
pub fn srd(truth: &[u8], pred: &[u8], cyclic: bool) -> Srd {
    if truth.is_empty() {
        return Srd::default();
    }
    let steps: Vec<f64> = truth
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            f64::from(match pred.get(i) {
                Some(&p) if cyclic => directional_steps(t, p % 8),
                Some(&p) => proximal_steps(t, p.min(4)),
                None => 4,
            })
        })
        .collect();
    let n = steps.len() as f64;
    Srd {
        blanks: steps.len(),
        mae: steps.iter().sum::<f64>() / n,
        mse: steps.iter().map(|s| s * s).sum::<f64>() / n,
        acc: steps.iter().filter(|s| **s == 0.0).count() as f64 / n,
    }
}

/// The whole report, averaged over the truth's images.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SigReport {
    pub frames: usize,
    pub predicted: usize,
    /// Predictions for images not in the truth.
    pub unknown: usize,
    pub mlsm: Mlsm,
    pub srgs_s: f64,
    pub srgs_ws: f64,
    pub srd_directional: Srd,
    pub srd_proximal: Srd,
}

/// One image of the truth table.
struct Truth {
    id: String,
    grid: Grid,
    directional: Vec<u8>,
    proximal: Vec<u8>,
    /// (subject, object) keys of the directional blanks and of the proximal blanks.
    directional_pairs: Vec<(String, String)>,
    proximal_pairs: Vec<(String, String)>,
}

fn pair_keys(r: &Value) -> (String, String) {
    let k = |n: &str| r[n].as_str().unwrap_or_default().to_string();
    (k("subject"), k("object"))
}

/// The relation labels a predicted grid implies for the truth's blanks, for predictions that
/// give a SIG but no answer lists: nodes are found by key (`self` for the ego); a blank whose
/// nodes the prediction lacks stays unanswered (255).
fn implied_answers(cfg: &SigConfig, t: &Truth, pred: &Grid) -> (Vec<u8>, Vec<u8>) {
    let pos = |k: &str| -> Option<[f64; 2]> {
        if k == crate::sig::frame::SELF_KEY {
            Some(pred.self_pos)
        } else {
            pred.vehicles.iter().find(|v| v.key == k).map(|v| v.pos)
        }
    };
    let offset = |(a, b): &(String, String)| -> Option<[f64; 2]> {
        let (pa, pb) = (pos(a)?, pos(b)?);
        Some([pa[0] - pb[0], pa[1] - pb[1]])
    };
    let dir = t
        .directional_pairs
        .iter()
        .map(|p| {
            offset(p)
                .and_then(|o| directional(o[0], o[1]))
                .unwrap_or(255)
        })
        .collect();
    let prox = t
        .proximal_pairs
        .iter()
        .map(|p| {
            offset(p).map_or(255, |o| {
                crate::sig::grid::proximal(&cfg.relations.proximal_bins, o[0].hypot(o[1]))
            })
        })
        .collect();
    (dir, prox)
}

fn read_truth(path: &Path) -> Result<Vec<Truth>> {
    let f = crate::store::input::open(path)?;
    let reader =
        FileReader::try_new(f, None).map_err(|e| Error::input(path, "arrow", e.to_string()))?;
    let mut out = Vec::new();
    for b in reader {
        let b = b?;
        let col = |n: &str| -> Result<StringArray> {
            b.column_by_name(n)
                .and_then(|c| c.as_any().downcast_ref::<StringArray>().cloned())
                .ok_or_else(|| {
                    Error::input(
                        path,
                        "schema",
                        format!("no string column {n}: not a sig_frames table"),
                    )
                })
        };
        let (ids, sigs, rels) = (
            col("camera_frame_id")?,
            col("sig_json")?,
            col("relations_json")?,
        );
        for i in 0..b.num_rows() {
            let rec = format!("row {i} ({})", ids.value(i));
            let bad = |d: String| Error::input(path, rec.clone(), d);
            let sig: Value = serde_json::from_str(sigs.value(i)).map_err(|e| bad(e.to_string()))?;
            let rel: Vec<Value> =
                serde_json::from_str(rels.value(i)).map_err(|e| bad(e.to_string()))?;
            out.push(Truth {
                id: ids.value(i).to_string(),
                grid: parse_sig(&sig).map_err(bad)?,
                directional: rel
                    .iter()
                    .filter_map(|r| r["directional"].as_u64().map(|d| d as u8))
                    .collect(),
                proximal: rel
                    .iter()
                    .filter_map(|r| r["proximal"].as_u64().map(|d| d as u8))
                    .collect(),
                directional_pairs: rel
                    .iter()
                    .filter(|r| r["directional"].is_u64())
                    .map(pair_keys)
                    .collect(),
                proximal_pairs: rel
                    .iter()
                    .filter(|r| r["proximal"].is_u64())
                    .map(pair_keys)
                    .collect(),
            });
        }
    }
    Ok(out)
}

struct Prediction {
    grid: Grid,
    directional: Vec<u8>,
    proximal: Vec<u8>,
}

fn read_predictions(path: &Path) -> Result<HashMap<String, Prediction>> {
    let f = crate::store::input::open(path)?;
    let mut out = HashMap::new();
    for (n, line) in BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|e| Error::io(path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let rec = format!("line {}", n + 1);
        let bad = |d: String| Error::input(path, rec.clone(), d);
        let v: Value = serde_json::from_str(&line).map_err(|e| bad(e.to_string()))?;
        let id = v["camera_frame_id"]
            .as_str()
            .ok_or_else(|| bad("no \"camera_frame_id\"".into()))?;
        let grid = parse_sig(&v["sig"]).map_err(|e| bad(format!("sig: {e}")))?;
        let ids = |k: &str| -> Vec<u8> {
            v[k].as_array()
                .map(|a| {
                    a.iter()
                        .map(|x| x.as_u64().unwrap_or(255).min(255) as u8)
                        .collect()
                })
                .unwrap_or_default()
        };
        out.insert(
            id.to_string(),
            Prediction {
                grid,
                directional: ids("answers_directional"),
                proximal: ids("answers_proximal"),
            },
        );
    }
    Ok(out)
}

/// Scores a predictions file against a `sig_frames.arrow`. An image without a prediction is
/// scored as an empty grid and unanswered blanks.
pub fn score_files(cfg: &SigConfig, pred: &Path, truth: &Path) -> Result<SigReport> {
    let truth = read_truth(truth)?;
    let preds = read_predictions(pred)?;
    let m = &cfg.metrics;
    let mut r = SigReport {
        frames: truth.len(),
        ..Default::default()
    };
    let known: std::collections::HashSet<&str> = truth.iter().map(|t| t.id.as_str()).collect();
    r.unknown = preds.keys().filter(|k| !known.contains(k.as_str())).count();
    let (mut dir_t, mut dir_p, mut prox_t, mut prox_p) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut sum = Mlsm::default();
    let add = |a: &mut Prf, b: &Prf| {
        a.precision += b.precision;
        a.recall += b.recall;
        a.assa += b.assa;
    };
    for t in &truth {
        let empty = Prediction {
            grid: Grid {
                self_pos: t.grid.self_pos,
                vehicles: vec![],
            },
            directional: vec![],
            proximal: vec![],
        };
        let p = match preds.get(&t.id) {
            Some(p) => {
                r.predicted += 1;
                p
            }
            None => &empty,
        };
        let x = mlsm(m, &t.grid, &p.grid);
        add(&mut sum.type_level, &x.type_level);
        add(&mut sum.order_level, &x.order_level);
        add(&mut sum.colour_level, &x.colour_level);
        add(&mut sum.mean, &x.mean);
        r.srgs_s += srgs(m, &t.grid, &p.grid, 1.0, 1.0);
        r.srgs_ws += srgs(m, &t.grid, &p.grid, m.ws_gamma, m.ws_beta);
        // Without answer lists, the answers the predicted grid implies.
        let implied;
        let p = if p.directional.is_empty() && p.proximal.is_empty() && !p.grid.vehicles.is_empty()
        {
            let (d, x) = implied_answers(cfg, t, &p.grid);
            implied = Prediction {
                grid: p.grid.clone(),
                directional: d,
                proximal: x,
            };
            &implied
        } else {
            p
        };
        // Blanks of this image, padded so a short answer list does not shift the next image's.
        dir_t.extend(&t.directional);
        dir_p
            .extend((0..t.directional.len()).map(|i| p.directional.get(i).copied().unwrap_or(255)));
        prox_t.extend(&t.proximal);
        prox_p.extend((0..t.proximal.len()).map(|i| p.proximal.get(i).copied().unwrap_or(255)));
    }
    let n = truth.len().max(1) as f64;
    let fin = |a: &mut Prf| {
        a.precision /= n;
        a.recall /= n;
        a.assa /= n;
        a.f1 = f1(a.precision, a.recall);
    };
    fin(&mut sum.type_level);
    fin(&mut sum.order_level);
    fin(&mut sum.colour_level);
    fin(&mut sum.mean);
    r.mlsm = sum;
    r.srgs_s /= n;
    r.srgs_ws /= n;
    // 255 marks an unanswered blank: the largest step distance.
    let missing_as_none = |t: &[u8], p: &[u8], cyclic: bool| {
        let s = srd(t, p, cyclic);
        let unanswered = p.iter().filter(|x| **x == 255).count() as f64;
        if unanswered == 0.0 || t.is_empty() {
            return s;
        }
        let answered: Vec<(u8, u8)> = t
            .iter()
            .zip(p)
            .filter(|(_, p)| **p != 255)
            .map(|(a, b)| (*a, *b))
            .collect();
        let (ta, pa): (Vec<u8>, Vec<u8>) = answered.into_iter().unzip();
        let sa = srd(&ta, &pa, cyclic);
        let k = t.len() as f64;
        let na = ta.len() as f64;
        Srd {
            blanks: t.len(),
            mae: (sa.mae * na + 4.0 * unanswered) / k,
            mse: (sa.mse * na + 16.0 * unanswered) / k,
            acc: sa.acc * na / k,
        }
    };
    r.srd_directional = missing_as_none(&dir_t, &dir_p, true);
    r.srd_proximal = missing_as_none(&prox_t, &prox_p, false);
    Ok(r)
}

/// A text summary.
pub(crate) fn summary(r: &SigReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "SIG: {} images, {} predicted, {} unknown predictions",
        r.frames, r.predicted, r.unknown
    );
    for (name, p) in [
        ("type", &r.mlsm.type_level),
        ("type+order", &r.mlsm.order_level),
        ("type+order+colour", &r.mlsm.colour_level),
        ("mean", &r.mlsm.mean),
    ] {
        let _ = writeln!(
            s,
            "  MLSM {name:<18} P {:.3}  R {:.3}  F1 {:.3}  AssA {:.3}",
            p.precision, p.recall, p.f1, p.assa
        );
    }
    let _ = writeln!(s, "  SRGS S {:.3}  WS {:.3}", r.srgs_s, r.srgs_ws);
    for (name, d) in [
        ("directional", &r.srd_directional),
        ("proximal", &r.srd_proximal),
    ] {
        let _ = writeln!(
            s,
            "  SRD {name:<12} MAE {:.3}  MSE {:.3}  Acc {:.3}  ({} blanks)",
            d.mae, d.mse, d.acc, d.blanks
        );
    }
    s
}
