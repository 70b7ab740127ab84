// Separable Gaussian, horizontal pass (reflect-101 borders) into f32 RGB.
// Twin: the first loop of corrupt::blur::gaussian_blur_f32.

struct Params {
    width: u32,
    height: u32,
    n: u32,
    mode: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> weights: array<f32>;
@group(0) @binding(2) var<storage, read> src: array<u32>;
@group(0) @binding(3) var<storage, read_write> tmp: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg);
    if i >= params.width * params.height {
        return;
    }
    let w = i32(params.width);
    let x = i32(i % params.width);
    let row = i - u32(x);
    let r = i32(params.n / 2u);
    var acc = vec3<f32>(0.0);
    for (var k = 0u; k < params.n; k++) {
        let sx = reflect101(x + i32(k) - r, w);
        let c = vec3<f32>(unpack_rgb(src[row + u32(sx)]));
        let wk = weights[k];
        acc.x += wk * c.x;
        acc.y += wk * c.y;
        acc.z += wk * c.z;
    }
    tmp[i * 3u] = acc.x;
    tmp[i * 3u + 1u] = acc.y;
    tmp[i * 3u + 2u] = acc.z;
}
