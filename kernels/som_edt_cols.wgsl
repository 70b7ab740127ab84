// Set-of-Mark EDT, pass 1 (columns): the CPU twin is `edt_column` in pipeline/visibility/anchor.rs,
// which also states the definitions. One invocation per image column: g(i, j) is the distance
// along the column to the nearest pixel of another label (or to a point outside the image).

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
@group(0) @binding(2) var<storage, read_write> g: array<u32>;

// The border band and out-of-range ids belong to no mask (`EdtParams::label`).
fn label(id: u32, i: u32, j: u32) -> u32 {
    let b = params.border;
    if (i < b || j < b || i + b >= params.width || j + b >= params.height
        || id >= params.num_objects) {
        return EMPTY;
    }
    return id;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let w = params.width;
    let h = params.height;
    if (i >= w) {
        return;
    }
    var s = 0u;
    var prev = EMPTY;
    for (var j = 0u; j < h; j++) {
        let l = label(ids[j * w + i], i, j);
        if (j > 0u && l != prev) {
            s = j;
        }
        prev = l;
        g[j * w + i] = j - s + 1u;
    }
    var e = h - 1u;
    var next = EMPTY;
    for (var jj = h; jj > 0u; jj--) {
        let j = jj - 1u;
        let l = label(ids[j * w + i], i, j);
        if (j + 1u < h && l != next) {
            e = j;
        }
        next = l;
        if (l == EMPTY) {
            g[j * w + i] = 0u;
        } else {
            g[j * w + i] = min(g[j * w + i], e - j + 1u);
        }
    }
}
