// Rain 3/4: 3×3 box blur of the streaked image (reflect-101, rounded), alpha-blend by the
// mask, kept exact as blend·255² (an integer), with per-channel 64-bit sums (sums[2c] low,
// sums[2c + 1] high). Twin: the blend loop of corrupt::weather::rain_cpu.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> mask: array<u32>;
@group(0) @binding(2) var<storage, read> streaked: array<u32>;
@group(0) @binding(3) var<storage, read> src: array<u32>;
@group(0) @binding(4) var<storage, read_write> blend: array<u32>;
@group(0) @binding(5) var<storage, read_write> sums: array<atomic<u32>>;

var<workgroup> wg: array<atomic<u32>, 3>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = flat_index(gid, nwg);
    let n = params.width * params.height;
    if i < n {
        let w = i32(params.width);
        let h = i32(params.height);
        let x = i32(i % params.width);
        let y = i32(i / params.width);
        var s = vec3<u32>(0u);
        for (var oy = -1; oy <= 1; oy++) {
            for (var ox = -1; ox <= 1; ox++) {
                let sx = reflect101(x + ox, w);
                let sy = reflect101(y + oy, h);
                s += unpack_rgb(streaked[u32(sy * w + sx)]);
            }
        }
        let b = (s + vec3<u32>(4u)) / 9u;
        let r = mask[i];
        let v = b * r + unpack_rgb(src[i]) * (255u - r);
        blend[i * 3u] = v.x;
        blend[i * 3u + 1u] = v.y;
        blend[i * 3u + 2u] = v.z;
        atomicAdd(&wg[0], v.x);
        atomicAdd(&wg[1], v.y);
        atomicAdd(&wg[2], v.z);
    }
    workgroupBarrier();
    if lid == 0u {
        // 64-bit adds: a wrap of the low word carries into the high word.
        for (var c = 0u; c < 3u; c++) {
            let v = atomicLoad(&wg[c]);
            let old = atomicAdd(&sums[2u * c], v);
            if old + v < old {
                atomicAdd(&sums[2u * c + 1u], 1u);
            }
        }
    }
}
