// Water Splash, first pass: blend white discs in order, rounding after each (OpenCV's
// addWeighted into uint8). Twin: corrupt::occlusion::splash_value.

struct Params {
    width: u32,
    height: u32,
    n_discs: u32,
    alpha: f32,
}

struct Disc {
    cx: i32,
    cy: i32,
    r: i32,
    pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> discs: array<Disc>;
@group(0) @binding(2) var<storage, read> src: array<u32>;
@group(0) @binding(3) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg);
    if i >= arrayLength(&dst) {
        return;
    }
    let x = i32(i % params.width);
    let y = i32(i / params.width);
    var v = vec3<f32>(unpack_rgb(src[i]));
    for (var k = 0u; k < params.n_discs; k++) {
        let d = discs[k];
        let dx = x - d.cx;
        let dy = y - d.cy;
        if dx * dx + dy * dy <= d.r * d.r {
            v.x = round(params.alpha * 255.0 + (1.0 - params.alpha) * v.x);
            v.y = round(params.alpha * 255.0 + (1.0 - params.alpha) * v.y);
            v.z = round(params.alpha * 255.0 + (1.0 - params.alpha) * v.z);
        }
    }
    dst[i] = pack_rgb(vec3<u32>(v));
}
