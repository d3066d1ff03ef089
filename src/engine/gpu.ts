// WebGPU device acquisition, the same for a browser Web Worker and Node (Dawn via the
// `webgpu` package). Requests the adapter's real limits — the defaults cap storage bindings
// at 128 MiB, far below what a 0.6B model needs — and the optional features we can use.

export interface GpuInfo {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  isFallbackAdapter: boolean;
}

export interface Gpu {
  device: GPUDevice;
  adapterInfo: GpuInfo;
  /** The limits the device was created with (the adapter's own, not WebGPU's defaults). */
  limits: GPUSupportedLimits;
  /** `shader-f16` is enabled: kernels may `enable f16;` and weights may be stored as f16. */
  f16: boolean;
  /**
   * Subgroup sizes the adapter reports (null when it has no `subgroups` feature). The feature is NOT
   * requested: no kernel uses subgroup operations (the row reductions use workgroup memory, which is
   * portable across subgroup sizes 4 / 8 / 32 / 64); see BENCHMARKS.md for why.
   */
  subgroupSizes: { min: number; max: number } | null;
  /** Software adapters (SwiftShader, lavapipe) prefer register-blocked kernels over shared-memory tiling. */
  software: boolean;
  /** `timestamp-query` is enabled (only when GpuOptions.timestampQuery asked for it: kernel profiling in the benches). */
  timestampQuery: boolean;
}

export class NoWebGpuError extends Error {
  constructor(detail: string) {
    super(`No WebGPU adapter available: ${detail}`);
    this.name = 'NoWebGpuError';
  }
}

const LIMITS_TO_RAISE = [
  'maxBufferSize',
  'maxStorageBufferBindingSize',
  'maxStorageBuffersPerShaderStage',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY',
  'maxComputeWorkgroupSizeZ',
  'maxComputeWorkgroupsPerDimension',
] as const;

const isNode = typeof process !== 'undefined' && !!process.versions?.node && typeof window === 'undefined'
  && typeof (globalThis as { WorkerGlobalScope?: unknown }).WorkerGlobalScope === 'undefined';

let nodeGpu: GPU | null = null;

/** CPU Vulkan drivers a Node process can be pinned to with WEBGPU_ADAPTER (tests run once per adapter). */
export type NamedAdapter = 'swiftshader' | 'lavapipe';

/** The adapter WEBGPU_ADAPTER names (Node only), or null when the environment leaves the choice to Vulkan. */
export function requestedAdapter(): NamedAdapter | null {
  const v = typeof process !== 'undefined' ? process.env?.WEBGPU_ADAPTER : undefined;
  if (!v) return null;
  if (v !== 'swiftshader' && v !== 'lavapipe') throw new NoWebGpuError(`WEBGPU_ADAPTER must be 'swiftshader' or 'lavapipe', got '${v}'`);
  return v;
}

/** ICD file of a named adapter: Debian chromium's SwiftShader, or Mesa 25's lavapipe extracted by .ci/run (LAVAPIPE_ICD overrides). */
function icdOf(name: NamedAdapter): string {
  return name === 'swiftshader' ? '/usr/lib/chromium/vk_swiftshader_icd.json' : (process.env.LAVAPIPE_ICD || '/opt/lavapipe/lvp_icd.json');
}

/** Whether the adapter Dawn returned is the one that was asked for (a missing driver must fail, not fall back). */
function isAdapter(name: NamedAdapter, info: GpuInfo): boolean {
  const text = `${info.architecture} ${info.description} ${info.device}`;
  return name === 'swiftshader' ? /swiftshader/i.test(text) : /llvmpipe|lavapipe/i.test(text);
}

/** Node: Dawn through the `webgpu` package, pointed at SwiftShader when no Vulkan GPU driver is configured. */
async function nodeNavigatorGpu(): Promise<GPU> {
  if (nodeGpu) return nodeGpu;
  const fs = await import('node:fs');
  const os = await import('node:os');
  // Debian 12's own lavapipe is rejected by Dawn; Debian's chromium ships SwiftShader's Vulkan ICD.
  // Fall back to it only when the user configured no driver and the machine has no GPU device node
  // (Mesa installs ICD files for GPUs that are not there, so the ICD folder proves nothing).
  const swiftshader = '/usr/lib/chromium/vk_swiftshader_icd.json';
  const hasGpuNode = ['/dev/dri', '/dev'].some((dir) => {
    try {
      return fs.readdirSync(dir).some((f) => /^renderD\d+$|^nvidia\d+$|^kfd$/.test(f));
    } catch {
      return false;
    }
  });
  const named = requestedAdapter();
  if (named) {
    // An explicit choice overrides any configured driver; a missing driver is an error, never a fallback.
    const icd = icdOf(named);
    if (!fs.existsSync(icd)) throw new NoWebGpuError(`WEBGPU_ADAPTER=${named} but its Vulkan driver file ${icd} does not exist${named === 'lavapipe' ? ' (run .ci/run, or set LAVAPIPE_ICD)' : ' (install Debian\'s chromium)'}`);
    process.env.VK_ICD_FILENAMES = icd;
    delete process.env.VK_DRIVER_FILES;
  } else if (!process.env.VK_ICD_FILENAMES && !process.env.VK_DRIVER_FILES && !hasGpuNode && fs.existsSync(swiftshader)) {
    process.env.VK_ICD_FILENAMES = swiftshader;
  }
  process.env.XDG_RUNTIME_DIR ??= os.tmpdir();
  const { create, globals } = await import('webgpu');
  Object.assign(globalThis, globals);
  const flags = (process.env.WEBGPU_DAWN_FLAGS ?? '').split(/\s+/).filter(Boolean);
  // Dawn rounds timestamps to 2^16 ns by default (a browser privacy guard): too coarse to time one
  // dispatch on a real GPU when the benches profile kernels. Node has no page to guard.
  if (!flags.some((f) => f.startsWith('disable-dawn-features='))) flags.push('disable-dawn-features=timestamp_quantization');
  nodeGpu = create(flags) as GPU;
  return nodeGpu;
}

export async function navigatorGpu(): Promise<GPU> {
  if (isNode) return nodeNavigatorGpu();
  const gpu = (globalThis.navigator as Navigator | undefined)?.gpu;
  if (!gpu) throw new NoWebGpuError('this browser does not expose navigator.gpu (WebGPU is off or unsupported; in Chrome, check chrome://gpu)');
  return gpu;
}

export interface GpuOptions {
  /** Store weights and run kernels in f16 when the adapter offers `shader-f16` (default true). */
  allowF16?: boolean;
  powerPreference?: GPUPowerPreference;
  /** Request `timestamp-query` when the adapter offers it (benchmark profiling only; default false). */
  timestampQuery?: boolean;
}

/** An adapter that emulates a GPU on the CPU (its memory is the machine's RAM). */
export function isSoftwareAdapter(info: Pick<GpuInfo, 'isFallbackAdapter' | 'architecture' | 'description' | 'device'>): boolean {
  return info.isFallbackAdapter || /swiftshader|software|llvmpipe|lavapipe/i.test(`${info.architecture} ${info.description} ${info.device}`);
}

/**
 * The buffer limits getGpu's device will have (it requests the adapter's own), without creating a
 * device: to check a run against them before any weight is uploaded. Null when there is no adapter.
 */
export async function adapterLimits(opts: GpuOptions = {}): Promise<{ maxStorageBufferBindingSize: number; maxBufferSize: number; software: boolean } | null> {
  const adapter = await (await navigatorGpu()).requestAdapter({ powerPreference: opts.powerPreference ?? 'high-performance' });
  if (!adapter) return null;
  const info = (adapter as GPUAdapter & { info?: GPUAdapterInfo }).info;
  const software = isSoftwareAdapter({
    isFallbackAdapter: Boolean((info as { isFallbackAdapter?: boolean } | undefined)?.isFallbackAdapter ?? (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter),
    architecture: info?.architecture ?? '', description: info?.description ?? '', device: info?.device ?? '',
  });
  return { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize, maxBufferSize: adapter.limits.maxBufferSize, software };
}

export async function getGpu(opts: GpuOptions = {}): Promise<Gpu> {
  const gpu = await navigatorGpu();
  const adapter = await gpu.requestAdapter({ powerPreference: opts.powerPreference ?? 'high-performance' });
  if (!adapter) {
    throw new NoWebGpuError(
      isNode
        ? 'Dawn found no Vulkan adapter. On a machine without a GPU install Debian\'s `chromium` (it ships SwiftShader), or set VK_ICD_FILENAMES to a Vulkan driver.'
        : 'requestAdapter() returned null (no GPU, or WebGPU blocked; headless Chromium needs --enable-unsafe-webgpu).',
    );
  }
  const requiredLimits: Record<string, number> = {};
  for (const name of LIMITS_TO_RAISE) {
    const v = (adapter.limits as unknown as Record<string, number>)[name];
    if (typeof v === 'number') requiredLimits[name] = v;
  }
  const features: GPUFeatureName[] = [];
  const f16 = (opts.allowF16 ?? true) && adapter.features.has('shader-f16');
  if (f16) features.push('shader-f16');
  const timestampQuery = Boolean(opts.timestampQuery) && adapter.features.has('timestamp-query');
  if (timestampQuery) features.push('timestamp-query');
  const device = await adapter.requestDevice({ requiredFeatures: features, requiredLimits });
  const info = (adapter as GPUAdapter & { info?: GPUAdapterInfo }).info;
  const adapterInfo: GpuInfo = {
    vendor: info?.vendor ?? '',
    architecture: info?.architecture ?? '',
    device: info?.device ?? '',
    description: info?.description ?? '',
    isFallbackAdapter: Boolean((info as { isFallbackAdapter?: boolean } | undefined)?.isFallbackAdapter
      ?? (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter),
  };
  const named = isNode ? requestedAdapter() : null;
  if (named && !isAdapter(named, adapterInfo)) {
    device.destroy();
    throw new NoWebGpuError(`WEBGPU_ADAPTER=${named} but Dawn returned "${adapterInfo.description || adapterInfo.architecture}"`);
  }
  const software = isSoftwareAdapter(adapterInfo);
  device.lost.then((l) => {
    if (l.reason !== 'destroyed') console.error(`WebGPU device lost: ${l.message}`);
  });
  const sg = info as { subgroupMinSize?: number; subgroupMaxSize?: number } | undefined;
  const subgroupSizes = adapter.features.has('subgroups') && sg?.subgroupMinSize ? { min: sg.subgroupMinSize, max: sg.subgroupMaxSize ?? sg.subgroupMinSize } : null;
  return { device, adapterInfo, limits: device.limits, f16, subgroupSizes, software, timestampQuery };
}

/** One line naming the adapter, for output and benchmarks: e.g. `llvmpipe (LLVM 15.0.7, 256 bits) (vulkan, software)`. */
export function adapterName(info: GpuInfo): string {
  const name = info.description || info.device || `${info.vendor} ${info.architecture}`.trim() || 'unknown adapter';
  return `${name}${info.isFallbackAdapter ? ' (software)' : ''}`;
}
