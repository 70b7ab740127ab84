// Set-of-Mark EDT, pass 2 (rows): the CPU twin is `edt_row` / `run_envelope` in
// pipeline/visibility/anchor.rs (Meijster's lower envelope of parabolas, per horizontal run of one
// label, integer arithmetic written in the same order). One invocation per image row; each
// row owns 2 × (width + 2) words of `scratch` (the envelope's s and t stacks).

struct Params {
    width: u32,
    height: u32,
    border: u32,
    num_objects: u32,
    mode: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

const EMPTY: u32 = 0xffffffffu;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> ids: array<u32>;
@group(0) @binding(2) var<storage, read> g: array<u32>;
@group(0) @binding(3) var<storage, read_write> scratch: array<i32>;
@group(0) @binding(4) var<storage, read_write> d2: array<u32>;

fn label(id: u32, i: u32, j: u32) -> u32 {
    let b = params.border;
    if (i < b || j < b || i + b >= params.width || j + b >= params.height
        || id >= params.num_objects) {
        return EMPTY;
    }
    return id;
}

// Rounds toward minus infinity (WGSL's `/` truncates, like Rust's).
fn floor_div(a: i32, b: i32) -> i32 {
    let q = a / b;
    if (a % b != 0 && a < 0) {
        return q - 1;
    }
    return q;
}

// f at local index k of a run starting at column a (k = 0 and k = m - 1 bound the run).
fn fval(k: i32, m: i32, row: u32, a: i32) -> i32 {
    if (k == 0 || k == m - 1) {
        return 0;
    }
    let v = i32(g[row + u32(a + k - 1)]);
    return v * v;
}

fn envelope(row: u32, sb: u32, tb: u32, a: i32, b: i32) {
    let m = b - a + 3;
    var q = 0;
    scratch[sb] = 0;
    scratch[tb] = 0;
    for (var u = 1; u < m; u++) {
        let fu = fval(u, m, row, a);
        loop {
            if (q < 0) {
                break;
            }
            let sq = scratch[sb + u32(q)];
            let tq = scratch[tb + u32(q)];
            if ((tq - sq) * (tq - sq) + fval(sq, m, row, a) > (tq - u) * (tq - u) + fu) {
                q -= 1;
            } else {
                break;
            }
        }
        if (q < 0) {
            q = 0;
            scratch[sb] = u;
        } else {
            let sq = scratch[sb + u32(q)];
            let wv = 1 + floor_div(u * u - sq * sq + fu - fval(sq, m, row, a), 2 * (u - sq));
            if (wv < m) {
                q += 1;
                scratch[sb + u32(q)] = u;
                scratch[tb + u32(q)] = wv;
            }
        }
    }
    for (var u = m - 1; u >= 0; u--) {
        let sq = scratch[sb + u32(q)];
        if (u >= 1 && u <= m - 2) {
            d2[row + u32(a + u - 1)] = u32((u - sq) * (u - sq) + fval(sq, m, row, a));
        }
        if (u == scratch[tb + u32(q)]) {
            q -= 1;
        }
    }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let w = params.width;
    if (j >= params.height) {
        return;
    }
    let row = j * w;
    let sb = j * 2u * (w + 2u);
    let tb = sb + w + 2u;
    var a = 0u;
    loop {
        if (a >= w) {
            break;
        }
        let l = label(ids[row + a], a, j);
        var b = a;
        loop {
            if (b + 1u >= w) {
                break;
            }
            if (label(ids[row + b + 1u], b + 1u, j) != l) {
                break;
            }
            b += 1u;
        }
        if (l == EMPTY) {
            for (var k = a; k <= b; k++) {
                d2[row + k] = 0u;
            }
        } else {
            envelope(row, sb, tb, i32(a), i32(b));
        }
        a = b + 1u;
    }
}
