// Set-of-Mark anchors: the argmax of d² per object, first pixel in raster order on ties. The
// CPU twin is `argmax_cpu` in pipeline/visibility/anchor.rs. One invocation per pixel, dispatched
// twice: mode 0 takes the maximum d² per object (`best`, cleared to 0), mode 1 the smallest
// raster index among the object's pixels reaching it (`first`, cleared to 0xffffffff).

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
@group(0) @binding(2) var<storage, read> d2: array<u32>;
@group(0) @binding(3) var<storage, read_write> best: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> first: array<atomic<u32>>;

fn label(id: u32, i: u32, j: u32) -> u32 {
    let b = params.border;
    if (i < b || j < b || i + b >= params.width || j + b >= params.height
        || id >= params.num_objects) {
        return EMPTY;
    }
    return id;
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = gid.x;
    if (k >= params.width * params.height) {
        return;
    }
    let i = k % params.width;
    let j = k / params.width;
    let l = label(ids[k], i, j);
    if (l == EMPTY) {
        return;
    }
    if (params.mode == 0u) {
        atomicMax(&best[l], d2[k]);
    } else if (d2[k] == atomicLoad(&best[l])) {
        atomicMin(&first[l], k);
    }
}
