// Snow 2/4: bilinear zoom of the crop, threshold, clip. Twin: corrupt::weather::snow_zoomed.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> noise: array<f32>;
@group(0) @binding(2) var<storage, read_write> zoomed: array<f32>;

fn cell(x: u32, y: u32) -> f32 {
    return noise[y * params.zoom.crop_w + x];
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg);
    if i >= arrayLength(&zoomed) {
        return;
    }
    let l = params.zoom;
    let x = i % params.zoom_w;
    let y = i / params.zoom_w;
    let sy = f32(y) * l.ratio_y;
    let sx = f32(x) * l.ratio_x;
    let y0 = min(u32(floor(sy)), l.crop_h - 1u);
    let x0 = min(u32(floor(sx)), l.crop_w - 1u);
    let fy = sy - f32(y0);
    let fx = sx - f32(x0);
    let y1 = min(y0 + 1u, l.crop_h - 1u);
    let x1 = min(x0 + 1u, l.crop_w - 1u);
    let a = cell(x0, y0);
    let b = cell(x1, y0);
    let c = cell(x0, y1);
    let d = cell(x1, y1);
    let t = a + (b - a) * fx;
    let u = c + (d - c) * fx;
    let v = t + (u - t) * fy;
    if v < params.threshold {
        zoomed[i] = 0.0;
    } else {
        zoomed[i] = clamp(v, 0.0, 1.0);
    }
}
