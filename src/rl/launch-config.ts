// A run's config from its layers, resolved once with its provenance: TRL's defaults, then each layer a
// front end gives, lowest first (the CLI: the task's preset ← --config ← flags ← --output; the app's
// worker: the config the page stored with the run). Every key records the layer that set it last,
// which `train --help` and the CLI's first line show. Values are coerced and validated by src/rl/config.ts.

import { configFromObject, configFromText, DEFAULT_CONFIG, type ConfigSources, type GRPOConfig } from './config.ts';

/** One layer of a run's config: who set the keys, and the keys. */
export type ConfigLayer =
  | {
      /** Named in the provenance: 'preset', 'task', '--config', 'run config'… */
      source: string;
      /** JSON values (a run.json, the page's stored config). */
      values: Readonly<Record<string, unknown>>;
      /** Keys this webgrpo does not know are dropped instead of refused (a stored run of a newer or older webgrpo). */
      dropUnknown?: boolean;
    }
  | {
      source: string;
      /** Flag texts (`--TRLNAME value`), coerced by config.ts: `true`/`false`, `None`, comma lists. */
      text: Readonly<Record<string, string>>;
    };

export interface ResolvedConfig {
  config: GRPOConfig;
  /** The layer each key came from (absent: TRL's default). */
  from: ConfigSources;
}

/** TRL's defaults ← `layers`, in order; a bad key or value throws by name (config.ts's errors). */
export function layerConfig(layers: readonly ConfigLayer[]): ResolvedConfig {
  let config = configFromObject({});
  const from: ConfigSources = {};
  for (const layer of layers) {
    const keys = 'text' in layer ? layer.text : layer.dropUnknown ? knownKeys(layer.values) : layer.values;
    config = 'text' in layer ? configFromText(layer.text, config) : configFromObject(keys as Record<string, unknown>, config);
    for (const k of Object.keys(keys)) from[k as keyof GRPOConfig] = layer.source;
  }
  return { config, from };
}

function knownKeys(values: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(values).filter(([k]) => k in DEFAULT_CONFIG));
}

/** One key set over a resolved config, by `source` (a rule of the launcher's, after the layers). */
export function overrideKey<K extends keyof GRPOConfig>(resolved: ResolvedConfig, key: K, value: GRPOConfig[K], source: string): ResolvedConfig {
  return { config: { ...resolved.config, [key]: value }, from: { ...resolved.from, [key]: source } };
}
