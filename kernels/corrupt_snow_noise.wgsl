// Snow 1/4: the normal field over the zoom crop. Twin: corrupt::weather::snow_noise.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> noise: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg);
    if i >= arrayLength(&noise) {
        return;
    }
    noise[i] = params.mean + params.std_dev * rng_normal(params.k0, params.k1, SNOW_NOISE, i);
}
