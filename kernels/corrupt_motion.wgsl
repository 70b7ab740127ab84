// Motion Blur: a 1-D gather along host-computed integer taps with clamped borders.
// Twin: corrupt::blur::motion_cpu.

struct Params {
    width: u32,
    height: u32,
    n: u32,
    extra: f32,
}

struct Tap {
    dx: i32,
    dy: i32,
    w: f32,
    pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> taps: array<Tap>;
@group(0) @binding(2) var<storage, read> src: array<u32>;
@group(0) @binding(3) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg);
    if i >= arrayLength(&dst) {
        return;
    }
    let w = i32(params.width);
    let h = i32(params.height);
    let x = i32(i % params.width);
    let y = i32(i / params.width);
    var acc = vec3<f32>(0.0);
    for (var t = 0u; t < params.n; t++) {
        let tap = taps[t];
        let sx = clamp(x + tap.dx, 0, w - 1);
        let sy = clamp(y + tap.dy, 0, h - 1);
        let c = vec3<f32>(unpack_rgb(src[u32(sy * w + sx)]));
        acc.x += tap.w * c.x;
        acc.y += tap.w * c.y;
        acc.z += tap.w * c.z;
    }
    let o = clamp(acc, vec3<f32>(0.0), vec3<f32>(255.0));
    dst[i] = pack_rgb(vec3<u32>(o));
}
