// Fog: min and max of the map, max of the image. stats[0] = ~order(min), stats[1] =
// order(max), stats[2] = image max (0..255); the buffer starts zeroed.

@group(0) @binding(0) var<storage, read> map: array<f32>;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> stats: array<atomic<u32>>;

var<workgroup> wg: array<atomic<u32>, 3>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = flat_index(gid, nwg);
    if i < arrayLength(&map) {
        let o = f32_order(map[i]);
        atomicMax(&wg[0], ~o);
        atomicMax(&wg[1], o);
    }
    if i < arrayLength(&src) {
        let c = unpack_rgb(src[i]);
        atomicMax(&wg[2], max(max(c.x, c.y), c.z));
    }
    workgroupBarrier();
    if lid == 0u {
        atomicMax(&stats[0], atomicLoad(&wg[0]));
        atomicMax(&stats[1], atomicLoad(&wg[1]));
        atomicMax(&stats[2], atomicLoad(&wg[2]));
    }
}
