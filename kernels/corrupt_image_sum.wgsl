// The sum of all channel values of an image as a 64-bit counter: sums[0] low word,
// sums[1] high word (the buffer starts zeroed).

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> sums: array<atomic<u32>>;

var<workgroup> wg: atomic<u32>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = flat_index(gid, nwg);
    if i < arrayLength(&src) {
        let c = unpack_rgb(src[i]);
        atomicAdd(&wg, c.x + c.y + c.z);
    }
    workgroupBarrier();
    if lid == 0u {
        // 64-bit add: a wrap of the low word carries into the high word.
        let v = atomicLoad(&wg);
        let old = atomicAdd(&sums[0], v);
        if old + v < old {
            atomicAdd(&sums[1], 1u);
        }
    }
}
