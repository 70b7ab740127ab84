// Separable Gaussian, vertical pass, rounded to u8. mode 0: every pixel blurred (Water
// Splash); mode 1: blurred inside the row spans, original outside (Lens Obstacle).
// Twin: corrupt::occlusion::splash_cpu / lens_cpu.

struct Params {
    width: u32,
    height: u32,
    n: u32,
    mode: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> weights: array<f32>;
@group(0) @binding(2) var<storage, read> tmp: array<f32>;
@group(0) @binding(3) var<storage, read> orig: array<u32>;
@group(0) @binding(4) var<storage, read> spans: array<vec2<i32>>;
@group(0) @binding(5) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg);
    if i >= arrayLength(&dst) {
        return;
    }
    let x = i32(i % params.width);
    let y = i32(i / params.width);
    if params.mode == 1u {
        let s = spans[y];
        if x < s.x || x > s.y {
            dst[i] = orig[i];
            return;
        }
    }
    let h = i32(params.height);
    let r = i32(params.n / 2u);
    var acc = vec3<f32>(0.0);
    for (var k = 0u; k < params.n; k++) {
        let sy = reflect101(y + i32(k) - r, h);
        let j = (u32(sy) * params.width + u32(x)) * 3u;
        let wk = weights[k];
        acc.x += wk * tmp[j];
        acc.y += wk * tmp[j + 1u];
        acc.z += wk * tmp[j + 2u];
    }
    let o = clamp(round(acc), vec3<f32>(0.0), vec3<f32>(255.0));
    dst[i] = pack_rgb(vec3<u32>(o));
}
