// GPU memory actually held by the engine, for the `gpu_memory_mib` metric. WebGPU has no memory
// query, so the worker counts what goes through its device: every createBuffer adds the buffer's
// size, its destroy() subtracts it. The peak since the last reading is what a step needed.

export interface GpuMemoryMeter {
  /** Bytes of buffers created and not yet destroyed. */
  readonly liveBytes: number;
  /** Highest liveBytes since the previous takePeak() (or since tracking began). */
  takePeak(): number;
}

const meters = new WeakMap<GPUDevice, GpuMemoryMeter>();

/** Starts counting the device's buffers (once per device; later calls return the same meter). */
export function trackGpuMemory(device: GPUDevice): GpuMemoryMeter {
  const existing = meters.get(device);
  if (existing) return existing;
  let live = 0;
  let peak = 0;
  const create = device.createBuffer.bind(device);
  device.createBuffer = (descriptor: GPUBufferDescriptor): GPUBuffer => {
    const buffer = create(descriptor);
    const size = buffer.size;
    live += size;
    peak = Math.max(peak, live);
    const destroy = buffer.destroy.bind(buffer);
    let destroyed = false;
    buffer.destroy = () => {
      if (!destroyed) live -= size;
      destroyed = true;
      destroy();
    };
    return buffer;
  };
  const meter: GpuMemoryMeter = {
    get liveBytes() {
      return live;
    },
    takePeak() {
      const p = peak;
      peak = live;
      return p;
    },
  };
  meters.set(device, meter);
  return meter;
}
