// Fog: one step of the diamond-square plasma fractal on a toroidal map (phase 0: squares,
// phase 1: both diamond sets). Twin: corrupt::weather::fog_level_element.

struct Params {
    k0: u32,
    k1: u32,
    size: u32,
    step: u32,
    wibble: f32,
    phase: u32,
    pad0: u32,
    pad1: u32,
}

const FOG_NODE: u32 = 0x0400u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> map: array<f32>;

fn at(y: u32, x: u32) -> u32 {
    return y * params.size + x;
}

fn noise(idx: u32) -> f32 {
    let u = rng_unit(params.k0, params.k1, FOG_NODE, idx);
    return params.wibble * (params.wibble * (2.0 * u - 1.0));
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = flat_index(gid, nwg);
    let n = params.size / params.step;
    if t >= n * n {
        return;
    }
    let i = t / n;
    let j = t % n;
    let s = params.step;
    let h = s / 2u;
    let i1 = (i + 1u) % n;
    let j1 = (j + 1u) % n;
    if params.phase == 0u {
        let sum = (map[at(i * s, j * s)] + map[at(i1 * s, j * s)])
            + (map[at(i * s, j1 * s)] + map[at(i1 * s, j1 * s)]);
        let idx = at(i * s + h, j * s + h);
        map[idx] = sum / 4.0 + noise(idx);
    } else {
        let ip = (i + n - 1u) % n;
        let jp = (j + n - 1u) % n;
        let dr_ij = map[at(i * s + h, j * s + h)];
        let top = (dr_ij + map[at(ip * s + h, j * s + h)]) + (map[at(i * s, j * s)] + map[at(i * s, j1 * s)]);
        let left = (dr_ij + map[at(i * s + h, jp * s + h)]) + (map[at(i * s, j * s)] + map[at(i1 * s, j * s)]);
        let a = at(i * s, j * s + h);
        let b = at(i * s + h, j * s);
        map[a] = top / 4.0 + noise(a);
        map[b] = left / 4.0 + noise(b);
    }
}
