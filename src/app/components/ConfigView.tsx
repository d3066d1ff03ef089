// The run's full record as it was started: every config key with TRL's name (the defaults it ran
// with included), the model and the environment, so a viewer of a shared run sees exactly what ran.
import { CONFIG_KEYS, DEFAULT_CONFIG } from '../../rl/config.ts';
import type { RunSummary } from '../api.ts';

const show = (v: unknown) => (v === undefined ? '—' : typeof v === 'string' ? v : JSON.stringify(v));

export function ConfigView({ run }: { run: RunSummary }) {
  // Keys the run set, then TRL's defaults for the keys it left out (marked as such).
  const keys = [...new Set([...Object.keys(run.config), ...Object.keys(CONFIG_KEYS)])];
  const { prompts, ...env } = run.env;
  return (
    <details className="panel config-view" data-testid="config-view">
      <summary><b>Config, model and environment</b> <span className="muted">(TRL GRPOConfig names)</span></summary>
      <div className="config-view-body">
        <table className="config-table">
          <tbody>
            {keys.map((k) => {
              const set = Object.hasOwn(run.config, k);
              return (
                <tr key={k} className={set ? '' : 'muted'} data-testid={`config-${k}`}>
                  <td><code>{k}</code></td>
                  <td>{show(set ? run.config[k] : (DEFAULT_CONFIG as unknown as Record<string, unknown>)[k])}{set ? '' : ' (default)'}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
        <div>
          <h4>model</h4>
          <pre data-testid="config-model">{JSON.stringify(run.model, null, 2)}</pre>
          <h4>environment</h4>
          <pre data-testid="config-env">{JSON.stringify(env, null, 2)}</pre>
          {Array.isArray(prompts) && <p className="muted">{prompts.length} prompts (in the exported JSON)</p>}
        </div>
      </div>
    </details>
  );
}
