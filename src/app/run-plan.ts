// The memory plan of the run being set up, for the config as typed: computed on the page (planMemory
// and runLimitErrors are pure) from the loaded model's config and the adapter's limits, so the plan
// and the errors beside the fields follow every keystroke.
import { chooseKvDtype, planMemory, towerPlan, type GpuDtype, type MemoryPlan } from '../engine/memory-plan.ts';
import { bindingLimit } from '../engine/params.ts';
import type { GRPOConfig } from '../rl/config.ts';
import { plannedWorkload, runLimitErrors, type AdapterLimits, type RunLimitErrors } from '../rl/run-limits.ts';
import type { ModelInfo, ProbeResult } from '../../workers/api.ts';

const GiB = 1024 ** 3;

/**
 * The adapter's limits as the probe reported them. A software adapter's memory is the machine's RAM,
 * which Chrome reports (rounded, in GiB) as navigator.deviceMemory; a GPU's own memory is not reported.
 */
export function adapterLimitsOf(probe: ProbeResult | null): AdapterLimits | null {
  if (!probe?.maxBufferSize || !probe.maxStorageBufferBindingSize) return null;
  const ram = (navigator as Navigator & { deviceMemory?: number }).deviceMemory;
  return {
    maxStorageBufferBindingSize: probe.maxStorageBufferBindingSize,
    maxBufferSize: probe.maxBufferSize,
    ...(probe.software && ram ? { budgetBytes: ram * GiB } : {}),
  };
}

export interface SetupMemoryPlan {
  plan: MemoryPlan;
  errors: RunLimitErrors;
  /** When the plan exceeds the memory known to be there: which setting to lower, and to what; else null. */
  lower: string | null;
}

/** The plan and the per-field limit errors of `config` on the loaded model; null until both are known. */
export function setupMemoryPlan(model: ModelInfo | null, probe: ProbeResult | null, config: GRPOConfig | null): SetupMemoryPlan | null {
  const limits = adapterLimitsOf(probe);
  if (!model || !limits || !config) return null;
  const planned = { config: model.config, weightDtype: model.weightDtype };
  const workload = plannedWorkload(config);
  const at = (numSequences: number, maxTokensPerSequence: number, kvDtype: GpuDtype) => planMemory({
    ...planned,
    ...workload,
    numSequences,
    maxTokensPerSequence,
    kvDtype,
    limits: { ...limits, maxStorageBufferBindingSize: bindingLimit(limits) },
    // The worker loads a vision-language checkpoint with its tower (trainer-service.ts).
    ...towerPlan(model.config),
  });
  // The KV cache's element type as the engine will choose it on this adapter (loadEngine's 'auto').
  const kvDtype = chooseKvDtype('auto', { f16: probe?.f16 ?? false, software: probe?.software ?? false }, (kv) => at(workload.numSequences, workload.maxTokensPerSequence, kv).fits);
  const plan = at(workload.numSequences, workload.maxTokensPerSequence, kvDtype);
  const prompt = workload.maxTokensPerSequence - config.max_completion_length;
  const lower = plan.fits || limits.budgetBytes === undefined ? null : [
    ['max_completion_length', largestFitting(config.max_completion_length, (n) => at(workload.numSequences, prompt + n, kvDtype).fits)],
    ['the generation batch (sequences decoding at once)', largestFitting(workload.numSequences, (n) => at(n, workload.maxTokensPerSequence, kvDtype).fits)],
  ].filter(([, n]) => (n as number) > 0).map(([field, n]) => `${field} to ${n}`).join(', or ');
  return {
    plan,
    errors: runLimitErrors(config, planned, limits),
    lower: lower === null ? null : lower ? `To fit, lower ${lower}.` : 'Lowering max_completion_length or the generation batch alone does not fit: lower both, or the weights (f16, a smaller model).',
  };
}

/** Largest n in [1, below) with fits(n) (fits is monotone), 0 when none. */
function largestFitting(below: number, fits: (n: number) => boolean): number {
  let lo = 0;
  let hi = below;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}
