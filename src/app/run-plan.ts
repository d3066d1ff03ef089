// The memory plan of the run being set up, for the config as typed: computed on the page (planMemory
// and runLimitErrors are pure) from the loaded model's config and the adapter's limits, so the plan
// and the errors beside the fields follow every keystroke.
import { planMemory, towerPlan, type MemoryPlan } from '../engine/memory-plan.ts';
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
}

/** The plan and the per-field limit errors of `config` on the loaded model; null until both are known. */
export function setupMemoryPlan(model: ModelInfo | null, probe: ProbeResult | null, config: GRPOConfig | null): SetupMemoryPlan | null {
  const limits = adapterLimitsOf(probe);
  if (!model || !limits || !config) return null;
  const planned = { config: model.config, weightDtype: model.weightDtype };
  const plan = planMemory({
    ...planned,
    ...plannedWorkload(config),
    limits: { ...limits, maxStorageBufferBindingSize: bindingLimit(limits) },
    // The worker loads a vision-language checkpoint with its tower (trainer-service.ts).
    ...towerPlan(model.config),
  });
  return { plan, errors: runLimitErrors(config, planned, limits) };
}
