// A real compute dispatch through the project's own getGpu(), checked against a JS result.
import { getGpu } from '../../src/engine/gpu.ts';

export default async function (args: { n: number }) {
  const gpu = await getGpu();
  const { device } = gpu;
  const n = args.n;
  const a = Float32Array.from({ length: n }, (_, i) => Math.sin(i));
  const input = device.createBuffer({ label: 'a', size: n * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(input, 0, a);
  const out = device.createBuffer({ label: 'out', size: n * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  const read = device.createBuffer({ label: 'read', size: n * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const pipeline = device.createComputePipeline({
    layout: 'auto',
    compute: {
      module: device.createShaderModule({
        code: `@group(0) @binding(0) var<storage, read> a: array<f32>;
               @group(0) @binding(1) var<storage, read_write> o: array<f32>;
               @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) {
                 if (g.x < arrayLength(&o)) { o[g.x] = a[g.x] * 2.0 + 0.5; }
               }`,
      }),
      entryPoint: 'main',
    },
  });
  const enc = device.createCommandEncoder();
  const pass = enc.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: [{ binding: 0, resource: { buffer: input } }, { binding: 1, resource: { buffer: out } }],
  }));
  pass.dispatchWorkgroups(Math.ceil(n / 64));
  pass.end();
  enc.copyBufferToBuffer(out, 0, read, 0, n * 4);
  device.queue.submit([enc.finish()]);
  await read.mapAsync(GPUMapMode.READ);
  const got = new Float32Array(read.getMappedRange().slice(0));
  let maxErr = 0;
  for (let i = 0; i < n; i++) maxErr = Math.max(maxErr, Math.abs(got[i] - (a[i] * 2 + 0.5)));
  const inWorker = typeof (globalThis as { WorkerGlobalScope?: unknown }).WorkerGlobalScope !== 'undefined';
  device.destroy();
  return { maxErr, inWorker, adapter: gpu.adapterInfo, maxBinding: gpu.limits.maxStorageBufferBindingSize };
}
