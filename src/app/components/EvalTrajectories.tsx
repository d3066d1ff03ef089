// The episodes of an Evaluate, one at a time, the trained policy's beside the base's on the same game:
// per turn the model's text, the call as parsed and what the tool answered; the reward and, for an
// episode not won, why (src/rl/eval/trajectory.ts failure reasons). Drawn like the rollout viewer's turns.
import { useState } from 'react';
import { formatNumber, splitSpecialTokens } from '../format.ts';
import type { Trajectory } from '../../rl/eval/trajectory.ts';

function Text({ text }: { text: string }) {
  return (
    <pre className="turn-text">
      {splitSpecialTokens(text).map((p, i) => (p.special ? <span key={i} className="special">{p.text}</span> : <span key={i}>{p.text}</span>))}
    </pre>
  );
}

function Episode({ label, t }: { label: string; t: Trajectory }) {
  return (
    <div className="eval-episode" data-testid={`eval-episode-${label}`}>
      <h4>
        {label} · {t.success ? <span className="ok">won</span> : <span className="bad">not won</span>} · reward {formatNumber(t.reward)} · {t.tool_calls} tool call{t.tool_calls === 1 ? '' : 's'}
        {t.failure_reason !== 'none' && <> · <span className="bad" data-testid="failure-reason">{t.failure_reason}</span></>}
      </h4>
      {t.error && <p className="bad">{t.error}</p>}
      <div className="turns">
        <div className="turn prompt"><div className="role">prompt</div><Text text={t.prompt} /></div>
        {t.turns.map((turn, i) => (
          <div key={i}>
            <div className="turn assistant"><div className="role">model, turn {i + 1}</div>{turn.model_text.trim() ? <Text text={turn.model_text} /> : turn.call ? null : <p className="muted">(no text)</p>}</div>
            {[turn.call, ...(turn.more_calls ?? [])].filter((c) => c !== null).map((c, k) => (
              <div key={k} className="turn call"><div className="role">parsed call</div><code data-testid="parsed-call">{c!.name}({JSON.stringify(c!.arguments)})</code></div>
            ))}
            {turn.observations.map((o, k) => (
              <div key={`o${k}`} className="turn tool"><div className="role">tool result</div><Text text={o} /></div>
            ))}
          </div>
        ))}
      </div>
    </div>
  );
}

export function EvalTrajectories({ trained, base }: { trained: Trajectory[]; base: Trajectory[] }) {
  const [i, setI] = useState(0);
  const n = Math.min(trained.length, base.length);
  if (n === 0) return null;
  const t = trained[i]!;
  return (
    <details className="eval-trajectories" data-testid="eval-trajectories">
      <summary>episodes ({n}{n < trained.length ? ` of ${trained.length}` : ''})</summary>
      <div className="pager">
        <button disabled={i === 0} onClick={() => setI(i - 1)}>←</button>
        <span>episode {i + 1} of {n} · {t.task}{t.seed !== null ? `, seed ${t.seed}` : ''}</span>
        <button disabled={i + 1 >= n} onClick={() => setI(i + 1)}>→</button>
      </div>
      <div className="eval-pair">
        <Episode label="trained" t={t} />
        <Episode label="base" t={base[i]!} />
      </div>
    </details>
  );
}
