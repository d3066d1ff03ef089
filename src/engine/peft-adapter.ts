// LoRA adapters in PEFT's format, both ways: the one adapter_config.json every exporter writes (CLI
// and app worker), the files of an exported adapter, and reading an adapter back (ours or one PEFT
// trained) into A/B tensors the engine can load, with clear errors for what the engine cannot run.

import type { CheckpointFiles } from '../model/files.ts';
import { browserFiles, memoryFiles } from '../model/files.ts';
import { decodeToFloat32, parseSafetensors, writeSafetensors } from '../model/safetensors.ts';
import type { ModelConfig } from '../model/types.ts';
import { layerLinears, linearShape, linearTensorName, QWEN3_5_LINEARS, storedTensorName } from '../model/qwen3-tensors.ts';
import type { AdapterSource, LoraTarget, NamedTensor, PeftLoraSettings } from './types.ts';
import { VISION_LORA_TARGETS, visionAdaptedLinears, visionLinearShape, type VisionLoraTarget } from '../model/qwen3_5-vision-tensors.ts';

export const ADAPTER_CONFIG_FILE = 'adapter_config.json';
export const ADAPTER_WEIGHTS_FILE = 'adapter_model.safetensors';

/** The PEFT release whose LoraConfig keys (and defaults) the exported adapter_config.json carries. */
export const PEFT_VERSION = '0.21.2';

/** Every linear PEFT's target_modules can name here: Qwen3's seven and Qwen3.5's Gated DeltaNet five. */
const TARGETS: readonly LoraTarget[] = QWEN3_5_LINEARS;


/** Where the base model came from: a Hub id (with its revision) or a local name. */
export interface BaseModelRef {
  name: string;
  revision?: string | null;
}

/**
 * adapter_config.json with every key PEFT's LoraConfig writes (PEFT_VERSION), set to what the engine
 * trained: plain LoRA on the listed Qwen3 linears, no bias, no dropout at inference, PEFT's init.
 */
export function peftAdapterConfig(lora: PeftLoraSettings, base: BaseModelRef): Record<string, unknown> {
  return {
    alora_invocation_tokens: null,
    alpha_pattern: {},
    arrow_config: null,
    auto_mapping: null,
    base_model_name_or_path: base.name,
    bias: 'none',
    corda_config: null,
    ensure_weight_tying: false,
    eva_config: null,
    exclude_modules: null,
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    kasa_config: null,
    layer_replication: null,
    layers_pattern: null,
    layers_to_transform: null,
    loftq_config: {},
    lora_alpha: lora.alpha,
    lora_bias: false,
    lora_dropout: 0.0,
    lora_ga_config: null,
    megatron_config: null,
    megatron_core: 'megatron.core',
    modules_to_save: null,
    monteclora_config: null,
    peft_type: 'LORA',
    peft_version: PEFT_VERSION,
    qalora_group_size: 16,
    r: lora.r,
    rank_pattern: {},
    revision: base.revision ?? null,
    // The tower's entries are dotted suffixes (attn.qkv, merger.linear_fc1, …) that PEFT matches to exactly those modules.
    target_modules: [...lora.targetModules, ...(lora.visionTargetModules ?? [])],
    target_parameters: null,
    task_type: 'CAUSAL_LM',
    trainable_token_indices: null,
    use_bdlora: null,
    use_dora: false,
    use_qalora: false,
    use_rslora: lora.useRslora,
    velora_config: null,
  };
}

/**
 * The two files of an exported adapter, ready to write to a folder or offer as downloads. `metadata`
 * goes into the weights file's safetensors header beside PEFT's `format` (PEFT ignores it).
 */
export function peftAdapterFiles(exported: { adapterConfig: Record<string, unknown>; tensors: NamedTensor[] }, metadata: Readonly<Record<string, string>> = {}): Map<string, Uint8Array> {
  const weights = writeSafetensors(
    exported.tensors.map((t) => ({ name: t.name, dtype: 'F32' as const, shape: t.shape, data: new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength) })),
    { ...metadata, format: 'pt' },
  );
  return new Map([
    [ADAPTER_CONFIG_FILE, new TextEncoder().encode(JSON.stringify(exported.adapterConfig, null, 2) + '\n')],
    [ADAPTER_WEIGHTS_FILE, weights],
  ]);
}

/**
 * PEFT's tensor name of an adapter factor: `base_model.model.<module path>.lora_A.weight`, the module
 * path as in the base checkpoint (Qwen3_5ForConditionalGeneration: `model.language_model.layers.…`).
 */
export function peftTensorName(loraName: string, config: ModelConfig): string {
  return `base_model.model.${storedTensorName(config, loraName)}`;
}

/** A PEFT adapter read back: its settings and A/B under the engine's names (`<linear>.lora_A.weight`). */
export interface PeftLoraAdapter {
  settings: PeftLoraSettings;
  /** base_model_name_or_path, when the adapter names one. */
  baseModel: string | null;
  tensors: NamedTensor[];
  /** The weights file's safetensors metadata (what a run recorded with its adapter, e.g. its tools). */
  metadata?: Record<string, string>;
}

/** Anything an adapter can be read from: a folder path (Node), picked files, in-memory files. */

async function adapterFiles(source: AdapterSource): Promise<CheckpointFiles> {
  if (typeof source === 'string') {
    const { isDirectory, nodeFolderFiles } = await import('../model/node-files.ts');
    if (!(await isDirectory(source))) throw new Error(`adapter: '${source}' is not a folder (expected one holding ${ADAPTER_CONFIG_FILE} and ${ADAPTER_WEIGHTS_FILE})`);
    return nodeFolderFiles(source);
  }
  if (source instanceof Map) return memoryFiles(source);
  if (typeof (source as CheckpointFiles).read === 'function') return source as CheckpointFiles;
  return browserFiles(source as Iterable<File>);
}

/** Keys whose non-default value changes the math in a way the engine does not implement. */
function unsupported(cfg: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const empty = (v: unknown) => v === undefined || v === null || v === false || (Array.isArray(v) && v.length === 0) || (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0);
  if (cfg.use_dora === true) problems.push('use_dora (DoRA)');
  if (cfg.bias !== undefined && cfg.bias !== 'none') problems.push(`bias '${String(cfg.bias)}'`);
  if (cfg.lora_bias === true) problems.push('lora_bias');
  if (cfg.fan_in_fan_out === true) problems.push('fan_in_fan_out');
  for (const key of ['rank_pattern', 'alpha_pattern', 'modules_to_save', 'layers_to_transform', 'layer_replication', 'target_parameters', 'trainable_token_indices', 'alora_invocation_tokens']) {
    if (!empty(cfg[key])) problems.push(`${key} ${JSON.stringify(cfg[key])}`);
  }
  if (cfg.use_qalora === true) problems.push('use_qalora');
  if (cfg.use_bdlora !== undefined && cfg.use_bdlora !== null && cfg.use_bdlora !== false) problems.push('use_bdlora');
  return problems;
}

const TENSOR = /^base_model\.model\.(.*?)layers\.(\d+)\.(self_attn|mlp|linear_attn)\.(\w+)\.lora_([AB])\.weight$/;
/** Qwen3.5's vision tower (Qwen3_5ForConditionalGeneration keeps it at model.visual, beside the language model). */
const VISION_TENSOR = /^base_model\.model\.model\.visual\.(?:blocks\.(\d+)\.)?([\w.]+)\.lora_([AB])\.weight$/;

/** One tower factor of an adapter: its engine name (`model.visual.….lora_A.weight`) and target, checked against the model. */
function visionFactor(name: string, shape: readonly number[], r: number, model: ModelConfig, where: string): { canonical: string; target: VisionLoraTarget } | null {
  const m = VISION_TENSOR.exec(name);
  if (!m) return null;
  const v = model.vision;
  if (!v) throw new Error(`adapter ${where}: tensor '${name}' adapts the vision tower, but the model's config.json has no vision_config`);
  const block = m[1] === undefined ? null : Number(m[1]);
  const target = m[2] as VisionLoraTarget;
  const isMerger = target.startsWith('merger.');
  if (!VISION_LORA_TARGETS.includes(target) || isMerger !== (block === null)) {
    throw new Error(`adapter ${where}: unsupported tensor '${name}' (webgrpo adapts the vision tower's blocks.N.{${VISION_LORA_TARGETS.filter((t) => !t.startsWith('merger.')).join(',')}} and merger.{linear_fc1,linear_fc2})`);
  }
  if (block !== null && block >= v.depth) throw new Error(`adapter ${where}: tensor '${name}' is for vision block ${block}, but the tower has ${v.depth} blocks`);
  const [out, inp] = visionLinearShape(v, target);
  const want = m[3] === 'A' ? [r, inp] : [out, r];
  if (shape.length !== 2 || shape[0] !== want[0] || shape[1] !== want[1]) {
    throw new Error(`adapter ${where}: tensor '${name}' has shape [${shape.join(', ')}], expected [${want.join(', ')}] (r=${r}, the tower's ${target} is [${out}, ${inp}])`);
  }
  return { canonical: name.slice('base_model.model.'.length), target };
}

/**
 * Reads adapter_config.json + adapter_model.safetensors and checks them against the model: PEFT's
 * tensor names, every targeted linear on every layer, A (r, in) and B (out, r). Throws naming the
 * key, tensor or shape the engine cannot use.
 */
export async function readPeftAdapter(source: AdapterSource, model: ModelConfig): Promise<PeftLoraAdapter> {
  const files = await adapterFiles(source);
  const where = files.location;
  const text = await files.readText(ADAPTER_CONFIG_FILE);
  if (text === null) throw new Error(`adapter ${where}: no ${ADAPTER_CONFIG_FILE}`);
  let cfg: Record<string, unknown>;
  try {
    cfg = JSON.parse(text);
  } catch (err) {
    throw new Error(`adapter ${where}/${ADAPTER_CONFIG_FILE}: not valid JSON (${(err as Error).message})`);
  }
  if (typeof cfg !== 'object' || cfg === null || Array.isArray(cfg)) throw new Error(`adapter ${where}/${ADAPTER_CONFIG_FILE}: must hold a JSON object`);
  if (cfg.peft_type !== 'LORA') throw new Error(`adapter ${where}: peft_type is ${JSON.stringify(cfg.peft_type)}; only LORA adapters are supported`);
  const problems = unsupported(cfg);
  if (problems.length > 0) throw new Error(`adapter ${where}: unsupported LoRA settings: ${problems.join(', ')} (webgrpo runs plain LoRA on the model's linears)`);
  // PEFT's LoraConfig defaults when a key is absent.
  const r = cfg.r ?? 8;
  const alpha = cfg.lora_alpha ?? 8;
  if (typeof r !== 'number' || !Number.isInteger(r) || r < 1) throw new Error(`adapter ${where}: r must be a positive integer, got ${JSON.stringify(r)}`);
  if (typeof alpha !== 'number' || !(alpha > 0)) throw new Error(`adapter ${where}: lora_alpha must be a positive number, got ${JSON.stringify(alpha)}`);
  const useRslora = cfg.use_rslora === true;

  const size = await files.size(ADAPTER_WEIGHTS_FILE);
  if (size === null) throw new Error(`adapter ${where}: no ${ADAPTER_WEIGHTS_FILE}${(await files.size('adapter_model.bin')) !== null ? ' (adapter_model.bin is a pickle: re-save it with safe_serialization=True)' : ''}`);
  const bytes = await files.read(ADAPTER_WEIGHTS_FILE, 0, size);
  const header = parseSafetensors(bytes, `${where}/${ADAPTER_WEIGHTS_FILE}`);

  const found = new Map<string, NamedTensor>();
  const modules = new Set<LoraTarget>();
  const visionModules = new Set<VisionLoraTarget>();
  for (const t of header.tensors) {
    const vf = visionFactor(t.name, t.shape, r, model, where);
    if (vf) {
      found.set(vf.canonical, { name: '', shape: [...t.shape], data: decodeToFloat32(t, bytes.subarray(t.fileOffset, t.fileOffset + t.byteLength)) });
      visionModules.add(vf.target);
      continue;
    }
    const m = TENSOR.exec(t.name);
    const layer = m ? Number(m[2]) : -1;
    const target = m?.[4] as LoraTarget | undefined;
    const canonical = m && target ? linearTensorName(layer, target) : '';
    if (!m || !target || !TARGETS.includes(target) || m[1] !== model.tensorPrefix || !canonical.startsWith(`model.layers.${layer}.${m[3]}.`)) {
      throw new Error(`adapter ${where}: unsupported tensor '${t.name}' (webgrpo loads base_model.model.${model.tensorPrefix}layers.N.{self_attn,mlp${model.linearAttention ? ',linear_attn' : ''}}.<linear>.lora_{A,B}.weight)`);
    }
    if (layer >= model.numLayers) throw new Error(`adapter ${where}: tensor '${t.name}' is for layer ${layer}, but the model has ${model.numLayers} layers`);
    if (!layerLinears(model, layer).includes(target)) throw new Error(`adapter ${where}: tensor '${t.name}' adapts ${target}, which layer ${layer} (${model.layerTypes[layer]}) does not have`);
    const [out, inp] = linearShape(model, target);
    const want = m[5] === 'A' ? [r, inp] : [out, r];
    if (t.shape.length !== 2 || t.shape[0] !== want[0] || t.shape[1] !== want[1]) {
      throw new Error(`adapter ${where}: tensor '${t.name}' has shape [${t.shape.join(', ')}], expected [${want.join(', ')}] (r=${r}, the model's ${target} is [${out}, ${inp}])`);
    }
    const data = decodeToFloat32(t, bytes.subarray(t.fileOffset, t.fileOffset + t.byteLength));
    found.set(`${canonical.slice(0, -'.weight'.length)}.lora_${m[5]}.weight`, { name: '', shape: [...t.shape], data });
    modules.add(target);
  }
  if (modules.size === 0) throw new Error(`adapter ${where}: ${ADAPTER_WEIGHTS_FILE} holds no LoRA tensors${visionModules.size > 0 ? ' for the language model (webgrpo trains the tower\'s adapters beside the language model\'s)' : ''}`);
  const listed = cfg.target_modules;
  if (Array.isArray(listed)) {
    const ours = listed.filter((x): x is LoraTarget => TARGETS.includes(x as LoraTarget));
    const oursVision = listed.filter((x): x is VisionLoraTarget => VISION_LORA_TARGETS.includes(x as VisionLoraTarget));
    const missing = [...ours.filter((t) => !modules.has(t)), ...oursVision.filter((t) => !visionModules.has(t))];
    if (missing.length > 0) throw new Error(`adapter ${where}: target_modules lists ${missing.join(', ')} but ${ADAPTER_WEIGHTS_FILE} has no factors for ${missing.length > 1 ? 'them' : 'it'}`);
    const extra = [...modules, ...visionModules].filter((t) => !listed.includes(t));
    if (extra.length > 0) throw new Error(`adapter ${where}: ${ADAPTER_WEIGHTS_FILE} has factors for ${extra.join(', ')}, which target_modules does not list`);
  }
  const targetModules = TARGETS.filter((t) => modules.has(t));
  const tensors: NamedTensor[] = [];
  for (let layer = 0; layer < model.numLayers; layer++) {
    for (const target of targetModules.filter((x) => layerLinears(model, layer).includes(x))) {
      for (const which of ['A', 'B'] as const) {
        const name = `${linearTensorName(layer, target).slice(0, -'.weight'.length)}.lora_${which}.weight`;
        const t = found.get(name);
        if (!t) throw new Error(`adapter ${where}: no ${peftTensorName(name, model)} (webgrpo needs every targeted linear adapted on every layer that has it)`);
        tensors.push({ ...t, name });
      }
    }
  }
  const visionTargetModules = VISION_LORA_TARGETS.filter((t) => visionModules.has(t));
  for (const { name: weight } of model.vision ? visionAdaptedLinears(model.vision, visionTargetModules) : []) {
    for (const which of ['A', 'B'] as const) {
      const name = `${weight.slice(0, -'.weight'.length)}.lora_${which}.weight`;
      const t = found.get(name);
      if (!t) throw new Error(`adapter ${where}: no base_model.model.${name} (webgrpo needs every targeted tower linear adapted in every block)`);
      tensors.push({ ...t, name });
    }
  }
  const baseModel = typeof cfg.base_model_name_or_path === 'string' ? cfg.base_model_name_or_path : null;
  return { settings: { r, alpha, targetModules, ...(visionTargetModules.length > 0 ? { visionTargetModules } : {}), useRslora }, baseModel, tensors, metadata: header.metadata };
}
