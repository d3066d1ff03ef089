import { describe, expect, it } from 'vitest';
import { getGpu } from '../../src/engine/gpu.ts';

describe('WebGPU in Node (Dawn)', () => {
  it('runs a compute dispatch that matches a JS result', async () => {
    const gpu = await getGpu();
    const { device } = gpu;
    expect(gpu.limits.maxStorageBufferBindingSize).toBeGreaterThan(128 * 1024 * 1024);
    const n = 1000;
    const a = Float32Array.from({ length: n }, (_, i) => Math.sin(i));
    const b = Float32Array.from({ length: n }, (_, i) => Math.cos(i * 0.5));
    const mk = (data: Float32Array<ArrayBuffer>) => {
      const buf = device.createBuffer({ label: 'in', size: data.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(buf, 0, data);
      return buf;
    };
    const out = device.createBuffer({ label: 'out', size: n * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const read = device.createBuffer({ label: 'read', size: n * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const module = device.createShaderModule({
      code: /* wgsl */ `
        @group(0) @binding(0) var<storage, read> a: array<f32>;
        @group(0) @binding(1) var<storage, read> b: array<f32>;
        @group(0) @binding(2) var<storage, read_write> o: array<f32>;
        @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) {
          if (g.x < arrayLength(&o)) { o[g.x] = a[g.x] * b[g.x] + 1.0; }
        }`,
    });
    const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
    const bind = device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [mk(a), mk(b), out].map((buffer, binding) => ({ binding, resource: { buffer } })),
    });
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bind);
    pass.dispatchWorkgroups(Math.ceil(n / 64));
    pass.end();
    enc.copyBufferToBuffer(out, 0, read, 0, n * 4);
    device.queue.submit([enc.finish()]);
    await read.mapAsync(GPUMapMode.READ);
    const got = new Float32Array(read.getMappedRange().slice(0));
    for (let i = 0; i < n; i++) expect(got[i]).toBeCloseTo(a[i] * b[i] + 1, 5);
    device.destroy();
  });
});
