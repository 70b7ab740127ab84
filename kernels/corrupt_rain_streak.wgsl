// Rain 2/4: brighten under the streaks, I + R·(1 − I/255)·(1 − mean/255), truncated.
// Twin: corrupt::weather::rain_streak.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> mask: array<u32>;
@group(0) @binding(2) var<storage, read> sums: array<u32>;
@group(0) @binding(3) var<storage, read> src: array<u32>;
@group(0) @binding(4) var<storage, read_write> dst: array<u32>;

fn streak(v: u32, r: u32, mt: f32) -> u32 {
    if r == 0u {
        return v;
    }
    let x = f32(v);
    let add = f32(r) * (1.0 - x / 255.0) * mt;
    return min(u32(x + add), 255u);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg);
    if i >= arrayLength(&dst) {
        return;
    }
    let s = f32(sums[1]) * 4294967296.0 + f32(sums[0]);
    let mt = 1.0 - s / (f32(params.width * params.height * 3u) * 255.0);
    let r = mask[i];
    let c = unpack_rgb(src[i]);
    dst[i] = pack_rgb(vec3<u32>(streak(c.x, r, mt), streak(c.y, r, mt), streak(c.z, r, mt)));
}
