// Counts what a decode loop costs on the host side of WebGPU, by wrapping one device's methods in
// place: buffers created, awaited host↔GPU round trips (every mapAsync, popErrorScope and
// onSubmittedWorkDone promise: each is a reply the host waits for from the GPU process), submits,
// and the host time between the last reply and the next submit (encoding and submitting a step).
// Used by `webgrpo bench decode` and by tests/engine/gpu-decode-session.test.ts.

export interface GpuCounts {
  buffersCreated: number;
  roundTrips: number;
  submits: number;
  /** buffersCreated as it stood at each submit. */
  buffersAtSubmit: number[];
  /** Host ms from the latest awaited reply (or counter reset) to each submit, one entry per submit. */
  hostMsBeforeSubmit: number[];
}

export interface GpuCounter {
  readonly counts: GpuCounts;
  /** Starts the counts afresh (the wrapped device stays wrapped). */
  reset(): void;
  /** Puts the device's own methods back. */
  restore(): void;
}

export function countGpu(device: GPUDevice): GpuCounter {
  const fresh = (): GpuCounts => ({ buffersCreated: 0, roundTrips: 0, submits: 0, buffersAtSubmit: [], hostMsBeforeSubmit: [] });
  const counter = { counts: fresh() } as { counts: GpuCounts };
  let lastReply = performance.now();
  const replied = <T>(p: Promise<T>): Promise<T> => {
    counter.counts.roundTrips++;
    return p.then((v) => {
      lastReply = performance.now();
      return v;
    });
  };
  const queue = device.queue;
  const own = {
    createBuffer: device.createBuffer,
    popErrorScope: device.popErrorScope,
    submit: queue.submit,
    onSubmittedWorkDone: queue.onSubmittedWorkDone,
  };
  device.createBuffer = function (desc: GPUBufferDescriptor): GPUBuffer {
    counter.counts.buffersCreated++;
    const buf = own.createBuffer.call(device, desc);
    if (desc.usage & GPUBufferUsage.MAP_READ) {
      const map = buf.mapAsync;
      buf.mapAsync = (...args: Parameters<GPUBuffer['mapAsync']>) => replied(map.apply(buf, args));
    }
    return buf;
  };
  device.popErrorScope = () => replied(own.popErrorScope.call(device));
  queue.submit = (buffers: Iterable<GPUCommandBuffer>) => {
    counter.counts.submits++;
    counter.counts.buffersAtSubmit.push(counter.counts.buffersCreated);
    own.submit.call(queue, buffers);
    counter.counts.hostMsBeforeSubmit.push(performance.now() - lastReply);
  };
  queue.onSubmittedWorkDone = () => replied(own.onSubmittedWorkDone.call(queue));
  return Object.assign(counter, {
    reset() {
      counter.counts = fresh();
      lastReply = performance.now();
    },
    restore() {
      device.createBuffer = own.createBuffer;
      device.popErrorScope = own.popErrorScope;
      queue.submit = own.submit;
      queue.onSubmittedWorkDone = own.onSubmittedWorkDone;
    },
  });
}

/**
 * Sums the bytes every `createBuffer` on `device` asks for, between calls of `take()` (or `takeEach()`,
 * the same buffers one by one with their labels), leaving out uniform arenas and read-back staging
 * (transfer buffers, not GPU working memory; the memory plan leaves them out too). Used to set a
 * bench's allocations against the engine's memory plan.
 */
export function recordBufferBytes(device: GPUDevice): { take(): number; takeEach(): { label: string; bytes: number }[]; restore(): void } {
  const own = device.createBuffer;
  let created: { label: string; bytes: number }[] = [];
  device.createBuffer = function (desc: GPUBufferDescriptor): GPUBuffer {
    if (!/^uniform arena$|readback$/.test(desc.label ?? '')) created.push({ label: desc.label ?? '', bytes: desc.size });
    return own.call(device, desc);
  };
  const takeEach = () => {
    const each = created;
    created = [];
    return each;
  };
  return {
    take: () => takeEach().reduce((a, e) => a + e.bytes, 0),
    takeEach,
    restore() {
      device.createBuffer = own;
    },
  };
}
