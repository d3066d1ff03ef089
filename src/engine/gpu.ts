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

/** What a Node process can find out about its Vulkan drivers before asking Dawn (see nodeAdapterCandidates). */
export interface NodeAdapterFacts {
  /** WEBGPU_ADAPTER. */
  requested: NamedAdapter | null;
  /** VK_ICD_FILENAMES or VK_DRIVER_FILES is set: the user chose the Vulkan driver. */
  vulkanConfigured: boolean;
  /** A GPU device node exists (/dev/dri/renderD*, /dev/nvidia*, /dev/kfd). */
  gpuDeviceNode: boolean;
  /** The ICD files that exist, by adapter. */
  icds: Partial<Record<NamedAdapter, string>>;
}

/**
 * One driver to try: `system` is whatever Vulkan finds on its own (a hardware GPU's driver), a named one
 * is pinned by its ICD file. `pinned`: WEBGPU_ADAPTER or VK_ICD_FILENAMES chose it, so it is used as found.
 */
export type NodeAdapterCandidate = { kind: 'system'; pinned: boolean } | { kind: NamedAdapter; icd: string; pinned: boolean };

/**
 * The drivers Node tries, fastest first: the one WEBGPU_ADAPTER names (a missing driver is an error), or the
 * one VK_ICD_FILENAMES / VK_DRIVER_FILES configure; else a hardware GPU when a device node says there may
 * be one (Mesa installs ICD files for GPUs that are not there, so the ICD folder proves nothing), then
 * lavapipe (several times faster than SwiftShader on the same CPU), then SwiftShader. The first one whose
 * adapter Dawn returns is used; `system` only when that adapter is hardware, unless nothing follows it.
 */
export function nodeAdapterCandidates(f: NodeAdapterFacts): NodeAdapterCandidate[] {
  if (f.requested) {
    const icd = f.icds[f.requested];
    if (!icd) throw new NoWebGpuError(`WEBGPU_ADAPTER=${f.requested} but its Vulkan driver file ${icdOf(f.requested)} does not exist${f.requested === 'lavapipe' ? ' (run .ci/run, or set LAVAPIPE_ICD)' : " (install Debian's chromium)"}`);
    return [{ kind: f.requested, icd, pinned: true }];
  }
  if (f.vulkanConfigured) return [{ kind: 'system', pinned: true }];
  const software = (['lavapipe', 'swiftshader'] as const).flatMap((kind) => (f.icds[kind] ? [{ kind, icd: f.icds[kind]!, pinned: false }] : []));
  return [...(f.gpuDeviceNode || software.length === 0 ? [{ kind: 'system' as const, pinned: false }] : []), ...software];
}

/** The driver Node's WebGPU runs on, and the adapter Dawn gave for it (the CLI names it on its first line). */
export interface NodeAdapter {
  candidate: NodeAdapterCandidate;
  info: GpuInfo;
}

type NodeGpu = { gpu: GPU; adapter: NodeAdapter | null };

/** The one probe of a process (concurrent callers share it; a failed one is tried again). */
let nodeGpu: Promise<NodeGpu> | null = null;

function gpuInfoOf(adapter: GPUAdapter): GpuInfo {
  const info = (adapter as GPUAdapter & { info?: GPUAdapterInfo }).info;
  return {
    vendor: info?.vendor ?? '',
    architecture: info?.architecture ?? '',
    device: info?.device ?? '',
    description: info?.description ?? '',
    isFallbackAdapter: Boolean((info as { isFallbackAdapter?: boolean } | undefined)?.isFallbackAdapter
      ?? (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter),
  };
}

async function nodeFacts(): Promise<NodeAdapterFacts> {
  const fs = await import('node:fs');
  const gpuDeviceNode = ['/dev/dri', '/dev'].some((dir) => {
    try {
      return fs.readdirSync(dir).some((f) => /^renderD\d+$|^nvidia\d+$|^kfd$/.test(f));
    } catch {
      return false;
    }
  });
  const icds: Partial<Record<NamedAdapter, string>> = {};
  for (const kind of ['lavapipe', 'swiftshader'] as const) if (fs.existsSync(icdOf(kind))) icds[kind] = icdOf(kind);
  return { requested: requestedAdapter(), vulkanConfigured: Boolean(process.env.VK_ICD_FILENAMES || process.env.VK_DRIVER_FILES), gpuDeviceNode, icds };
}

/**
 * Node: Dawn through the `webgpu` package, on the first of nodeAdapterCandidates that gives an adapter.
 * Each try is a new Dawn instance: the Vulkan loader reads VK_ICD_FILENAMES when an instance is created.
 */
function nodeNavigatorGpu(): Promise<NodeGpu> {
  nodeGpu ??= openNodeGpu().catch((err: unknown) => {
    nodeGpu = null;
    throw err;
  });
  return nodeGpu;
}

async function openNodeGpu(): Promise<NodeGpu> {
  const os = await import('node:os');
  const candidates = nodeAdapterCandidates(await nodeFacts());
  process.env.XDG_RUNTIME_DIR ??= os.tmpdir();
  const { create, globals } = await import('webgpu');
  Object.assign(globalThis, globals);
  const flags = (process.env.WEBGPU_DAWN_FLAGS ?? '').split(/\s+/).filter(Boolean);
  // Dawn rounds timestamps to 2^16 ns by default (a browser privacy guard): too coarse to time one
  // dispatch on a real GPU when the benches profile kernels. Node has no page to guard.
  if (!flags.some((f) => f.startsWith('disable-dawn-features='))) flags.push('disable-dawn-features=timestamp_quantization');
  let gpu: GPU | null = null;
  let fallback: { gpu: GPU; adapter: NodeAdapter } | null = null;
  for (const candidate of candidates) {
    // `system` comes first when tried, so the environment is still the user's own for it.
    if (candidate.kind !== 'system') {
      process.env.VK_ICD_FILENAMES = candidate.icd;
      delete process.env.VK_DRIVER_FILES;
    }
    gpu = create(flags) as GPU;
    const found = await gpu.requestAdapter({ powerPreference: 'high-performance' });
    if (!found) continue;
    const adapter = { candidate, info: gpuInfoOf(found) };
    // Vulkan's own choice is taken only when it is a hardware GPU: its software driver (Debian 12's
    // lavapipe, which Dawn rejects, or an older Mesa's) is no faster than the ones tried next.
    if (candidate.kind !== 'system' || candidate.pinned || !isSoftwareAdapter(adapter.info)) return { gpu, adapter };
    fallback = { gpu, adapter };
  }
  // Candidates are never empty. A Dawn instance keeps the drivers it was created with.
  return fallback ?? { gpu: gpu!, adapter: null };
}

/** Node: the driver and adapter WebGPU runs on (null when Dawn found none). */
export async function nodeAdapter(): Promise<NodeAdapter | null> {
  return (await nodeNavigatorGpu()).adapter;
}

export async function navigatorGpu(): Promise<GPU> {
  if (isNode) return (await nodeNavigatorGpu()).gpu;
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
  const software = isSoftwareAdapter(gpuInfoOf(adapter));
  return { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize, maxBufferSize: adapter.limits.maxBufferSize, software };
}

export async function getGpu(opts: GpuOptions = {}): Promise<Gpu> {
  const gpu = await navigatorGpu();
  const adapter = await gpu.requestAdapter({ powerPreference: opts.powerPreference ?? 'high-performance' });
  if (!adapter) {
    throw new NoWebGpuError(
      isNode
        ? 'Dawn found no Vulkan adapter. On a machine without a GPU install Debian\'s `chromium` and `libvulkan1` (SwiftShader), run .ci/run (lavapipe), or set VK_ICD_FILENAMES to a Vulkan driver.'
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
  const adapterInfo = gpuInfoOf(adapter);
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
