// The z-buffer: rasterises a batch of images' triangles with the exact rules of
// pipeline/visibility/raster.rs (its CPU reference `raster_cpu` is the twin; the host side is
// pipeline/visibility/gpu.rs). Keep the per-pixel arithmetic below in step with `covers`,
// `inv_depth` and `depth_key` there: every expression is written in the same order.
//
// One entry point runs one of three passes, chosen by `params.mode` (uniform, so every
// barrier below is reached in uniform control flow):
//
//   MODE_DEPTH    one workgroup per work item (triangle, first pixel of a 256-pixel chunk of
//                 its bounding box), one invocation per pixel: z-test pass 1 (minimum depth
//                 key per pixel) and the object's projected-pixel count.
//   MODE_ID       the same work items: z-test pass 2 (smallest object among the triangles
//                 whose key equals the pixel's minimum).
//   MODE_RESOLVE  one invocation per pixel of the batch: per-object visible count, modal box
//                 and sums of the pixel indices.
//
// Buffers the host clears to zero before pass 1 hold complemented values, so that zero means
// "nothing yet" and `atomicMax` of a complement is a minimum of the value: keys[p] = ~key,
// ids[p] = ~slot (a slot is the batch-wide index of an (image, object) pair that has
// triangles; slots of one image are in object order, so the smallest slot is the smallest
// object), stats[slot * STATS + STAT_X0] = ~x0, likewise y0.

struct Params {
    mode: u32,
    // Workgroups along x of a 2-D dispatch: workgroup (x, y) handles index y * groups_x + x.
    groups_x: u32,
    // Work items (modes 1 and 2) or pixels (mode 3) of the batch.
    count: u32,
    num_images: u32,
}

// An image of the batch: where its pixels start in keys/ids, and its grid.
struct Image {
    offset: u32,
    width: u32,
    height: u32,
    sub_bits: u32,
}

// The CPU's `TriSetup` (72 bytes), field for field.
struct TriSetup {
    x: array<i32, 3>,
    y: array<i32, 3>,
    i0: u32,
    j0: u32,
    i1: u32,
    j1: u32,
    w0: f32,
    wi_hi: f32,
    wi_lo: f32,
    wj_hi: f32,
    wj_lo: f32,
    obj: u32,
    top_left: u32,
    pad: u32,
}

// Per triangle: x = image, y = slot, z = index of the slot's first triangle (the triangles
// of a slot are contiguous), w unused.
alias TriMeta = vec4<u32>;

const MODE_DEPTH: u32 = 1u;
const MODE_ID: u32 = 2u;
const MODE_RESOLVE: u32 = 3u;

const WG: u32 = 256u;

// Per-slot statistics, STATS u32 words each.
const STATS: u32 = 10u;
const STAT_PROJECTED: u32 = 0u;
const STAT_VISIBLE: u32 = 1u;
const STAT_X0: u32 = 2u; // ~min i
const STAT_Y0: u32 = 3u; // ~min j
const STAT_X1: u32 = 4u; // max i + 1
const STAT_Y1: u32 = 5u; // max j + 1
const STAT_SUM_I: u32 = 6u; // low word, high word at + 1
const STAT_SUM_J: u32 = 8u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> images: array<Image>;
@group(0) @binding(2) var<storage, read> tris: array<TriSetup>;
@group(0) @binding(3) var<storage, read> tri_meta: array<TriMeta>;
// x = triangle, y = index of the chunk's first pixel in the triangle's bounding box (row-major).
@group(0) @binding(4) var<storage, read> items: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read_write> keys: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> ids: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> stats: array<atomic<u32>>;

var<workgroup> wg_count: atomic<u32>;
var<workgroup> wg_min_i: atomic<u32>;
var<workgroup> wg_min_j: atomic<u32>;
var<workgroup> wg_max_i: atomic<u32>;
var<workgroup> wg_max_j: atomic<u32>;
var<workgroup> wg_sum_i: atomic<u32>;
var<workgroup> wg_sum_j: atomic<u32>;

// Rules 3–5: whether triangle t covers pixel (i, j) of a grid with `sb` sub-pixel bits.
fn covers(t: TriSetup, sb: u32, i: u32, j: u32) -> bool {
    if i < t.i0 || i > t.i1 || j < t.j0 || j > t.j1 {
        return false;
    }
    let half = 1i << (sb - 1u);
    let px = (i32(i) << sb) + half;
    let py = (i32(j) << sb) + half;
    return edge_in(t, 0u, 1u, 2u, px, py) && edge_in(t, 1u, 2u, 0u, px, py)
        && edge_in(t, 2u, 0u, 1u, px, py);
}

// Rules 3 and 5 for edge k, from vertex a = (k + 1) % 3 to b = (k + 2) % 3: E_k > 0, or
// E_k == 0 on a top-left edge.
fn edge_in(t: TriSetup, k: u32, a: u32, b: u32, px: i32, py: i32) -> bool {
    let e = (t.x[b] - t.x[a]) * (py - t.y[a]) - (t.y[b] - t.y[a]) * (px - t.x[a]);
    return e > 0i || (e == 0i && ((t.top_left >> k) & 1u) == 1u);
}

// Rules 7 and 8: the depth key of triangle t at pixel (i, j) of its bounding box. Every
// product is exact, so only the order of the four additions matters; it is the CPU's.
fn key_at(t: TriSetup, i: u32, j: u32) -> u32 {
    let di = f32(i - t.i0);
    let dj = f32(j - t.j0);
    var w = t.w0 + t.wi_hi * di;
    w = w + t.wj_hi * dj;
    w = w + t.wi_lo * di;
    w = w + t.wj_lo * dj;
    // f32::MIN_POSITIVE, written as its bits so that no literal rounding is involved.
    return 0xFFFFFFFFu - bitcast<u32>(max(w, bitcast<f32>(0x00800000u)));
}

// Adds v to the 64-bit value at stats[at] (low word) and stats[at + 1] (high word).
// atomicAdd returns the previous low word: the sum wrapped iff it is smaller than that.
fn add64(at: u32, v: u32) {
    let old = atomicAdd(&stats[at], v);
    if old + v < old {
        atomicAdd(&stats[at + 1u], 1u);
    }
}

// The image holding batch pixel p: the last image whose offset is <= p (offsets ascend).
fn image_of(p: u32) -> u32 {
    var lo = 0u;
    var hi = params.num_images;
    while hi - lo > 1u {
        let mid = (lo + hi) / 2u;
        if images[mid].offset <= p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// Passes 1 and 2: the pixel of work item `item` this invocation handles, if covered.
fn raster(item: u32, lid: u32) {
    let it = items[item];
    let t = tris[it.x];
    let m = tri_meta[it.x];
    let img = images[m.x];
    let bw = t.i1 - t.i0 + 1u;
    let k = it.y + lid;
    if k >= bw * (t.j1 - t.j0 + 1u) {
        return;
    }
    let i = t.i0 + k % bw;
    let j = t.j0 + k / bw;
    if !covers(t, img.sub_bits, i, j) {
        return;
    }
    let key = key_at(t, i, j);
    let p = img.offset + j * img.width + i;
    if params.mode == MODE_DEPTH {
        atomicMax(&keys[p], ~key);
        // The union of the slot's triangles: count the pixel for its first covering triangle.
        for (var u = m.z; u < it.x; u++) {
            if covers(tris[u], img.sub_bits, i, j) {
                return;
            }
        }
        atomicAdd(&wg_count, 1u);
    } else {
        if atomicLoad(&keys[p]) == ~key {
            atomicMax(&ids[p], ~m.y);
        }
    }
}

// Pass 3 for batch pixel p holding (complemented) slot `id`; `lead` is the id of the
// workgroup's first pixel, whose statistics are gathered in workgroup memory first.
fn resolve(p: u32, id: u32, lead: u32) {
    let img = images[image_of(p)];
    let q = p - img.offset;
    let i = q % img.width;
    let j = q / img.width;
    if id == lead {
        atomicAdd(&wg_count, 1u);
        atomicMin(&wg_min_i, i);
        atomicMin(&wg_min_j, j);
        atomicMax(&wg_max_i, i + 1u);
        atomicMax(&wg_max_j, j + 1u);
        atomicAdd(&wg_sum_i, i);
        atomicAdd(&wg_sum_j, j);
    } else {
        let s = (~id) * STATS;
        atomicAdd(&stats[s + STAT_VISIBLE], 1u);
        atomicMax(&stats[s + STAT_X0], ~i);
        atomicMax(&stats[s + STAT_Y0], ~j);
        atomicMax(&stats[s + STAT_X1], i + 1u);
        atomicMax(&stats[s + STAT_Y1], j + 1u);
        add64(s + STAT_SUM_I, i);
        add64(s + STAT_SUM_J, j);
    }
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let index = wid.y * params.groups_x + wid.x;
    if lid == 0u {
        atomicStore(&wg_count, 0u);
        atomicStore(&wg_min_i, 0xFFFFFFFFu);
        atomicStore(&wg_min_j, 0xFFFFFFFFu);
        atomicStore(&wg_max_i, 0u);
        atomicStore(&wg_max_j, 0u);
        atomicStore(&wg_sum_i, 0u);
        atomicStore(&wg_sum_j, 0u);
    }
    workgroupBarrier();

    var lead = 0u;
    if params.mode == MODE_RESOLVE {
        let base = index * WG;
        if base < params.count {
            // Pass 2 is over: every invocation reads the same value.
            lead = atomicLoad(&ids[base]);
            let p = base + lid;
            if p < params.count {
                let id = atomicLoad(&ids[p]);
                if id != 0u {
                    resolve(p, id, lead);
                }
            }
        }
    } else if index < params.count {
        raster(index, lid);
    }
    workgroupBarrier();

    if lid != 0u {
        return;
    }
    let n = atomicLoad(&wg_count);
    if n == 0u {
        return;
    }
    if params.mode == MODE_DEPTH {
        let s = tri_meta[items[index].x].y * STATS;
        atomicAdd(&stats[s + STAT_PROJECTED], n);
    } else if params.mode == MODE_RESOLVE {
        let s = (~lead) * STATS;
        atomicAdd(&stats[s + STAT_VISIBLE], n);
        atomicMax(&stats[s + STAT_X0], ~atomicLoad(&wg_min_i));
        atomicMax(&stats[s + STAT_Y0], ~atomicLoad(&wg_min_j));
        atomicMax(&stats[s + STAT_X1], atomicLoad(&wg_max_i));
        atomicMax(&stats[s + STAT_Y1], atomicLoad(&wg_max_j));
        add64(s + STAT_SUM_I, atomicLoad(&wg_sum_i));
        add64(s + STAT_SUM_J, atomicLoad(&wg_sum_j));
    }
}
