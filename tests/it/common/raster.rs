//! Comparing a GPU rasteriser's output with the CPU twin's.

use drivegen::visibility::raster::RasterOut;

/// Panics at the first difference between the two outputs: size, per-object results, instance
/// ids or depth keys (the pixel and both values named).
pub fn assert_same(gpu: &RasterOut, cpu: &RasterOut, what: &str) {
    assert_eq!((gpu.width, gpu.height), (cpu.width, cpu.height), "{what}");
    assert_eq!(gpu.objects.len(), cpu.objects.len(), "{what}: object count");
    for (k, (g, c)) in gpu.objects.iter().zip(&cpu.objects).enumerate() {
        assert_eq!(g, c, "{what}: object {k}");
    }
    assert_eq!(gpu.ids.len(), cpu.ids.len(), "{what}: id map size");
    if let Some(p) = gpu.ids.iter().zip(&cpu.ids).position(|(a, b)| a != b) {
        panic!(
            "{what}: instance id differs at pixel ({}, {}): gpu {} cpu {}",
            p as u32 % cpu.width,
            p as u32 / cpu.width,
            gpu.ids[p],
            cpu.ids[p]
        );
    }
    if let Some(p) = gpu
        .depth_keys
        .iter()
        .zip(&cpu.depth_keys)
        .position(|(a, b)| a != b)
    {
        panic!(
            "{what}: depth key differs at pixel ({}, {}): gpu {:#x} cpu {:#x}",
            p as u32 % cpu.width,
            p as u32 / cpu.width,
            gpu.depth_keys[p],
            cpu.depth_keys[p]
        );
    }
}
