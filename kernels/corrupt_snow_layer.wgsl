// Snow 3/4: motion blur of the zoomed layer, quantised to 0..255.
// Twin: corrupt::weather::snow_layer.

struct Tap {
    dx: i32,
    dy: i32,
    w: f32,
    pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> taps: array<Tap>;
@group(0) @binding(2) var<storage, read> zoomed: array<f32>;
@group(0) @binding(3) var<storage, read_write> layer: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg);
    if i >= arrayLength(&layer) {
        return;
    }
    let x = i32(i % params.width);
    let y = i32(i / params.width);
    let w = i32(params.zoom_w);
    let h = i32(params.zoom_h);
    var acc = 0.0;
    for (var t = 0u; t < params.n_taps; t++) {
        let tap = taps[t];
        let sx = clamp(x + tap.dx, 0, w - 1);
        let sy = clamp(y + tap.dy, 0, h - 1);
        acc += tap.w * zoomed[u32(sy * w + sx)];
    }
    layer[i] = u32(clamp(round(acc * 255.0), 0.0, 255.0));
}
