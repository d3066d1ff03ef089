// Conversations of recent steps, grouped as GRPO groups them: the prompt, the model's turns, tool
// calls, environment responses, reward and advantage. Special tokens are drawn faintly. Steps, groups
// and rollouts are numbered from 1, as the progress bar and the charts' step axis count.
import { useState } from 'react';
import type { RolloutView } from '../worker-api.ts';
import { formatNumber, splitSpecialTokens } from '../format.ts';

function Text({ text }: { text: string }) {
  return (
    <pre className="turn-text">
      {splitSpecialTokens(text).map((p, i) => (p.special ? <span key={i} className="special">{p.text}</span> : <span key={i}>{p.text}</span>))}
    </pre>
  );
}

function Rollout({ r }: { r: RolloutView }) {
  const [open, setOpen] = useState(false);
  const adv = r.advantage;
  return (
    <div className="rollout" data-testid="rollout">
      <button className="rollout-head" onClick={() => setOpen(!open)}>
        <span>#{r.index + 1}</span>
        <span className="reward">reward {formatNumber(r.reward)}</span>
        <span className={adv > 0 ? 'adv pos' : adv < 0 ? 'adv neg' : 'adv'}>advantage {formatNumber(adv)}</span>
        <span className="calls">{r.turns.filter((t) => t.role === 'tool').length} tool calls</span>
        {r.error && <span className="error">unscorable: {r.error}</span>}
      </button>
      {open && (
        <div className="turns">
          {r.turns.map((t, i) => (
            <div key={i} className={`turn ${t.role}`}>
              <div className="role">{t.role === 'tool' ? `tool ${t.name ?? ''}` : t.role}</div>
              <Text text={t.text} />
            </div>
          ))}
          {Object.keys(r.rewards).length > 0 && (
            <div className="reward-fns">
              {Object.entries(r.rewards).map(([k, v]) => <span key={k}>{k}: {formatNumber(v)}</span>)}
            </div>
          )}
        </div>
      )}
    </div>
  );
}

export function RolloutViewer({ steps }: { steps: { step: number; rollouts: RolloutView[] }[] }) {
  const [which, setWhich] = useState<number | null>(null);
  if (steps.length === 0) return <p className="muted">Rollouts appear after the first GRPO step.</p>;
  const current = steps.find((s) => s.step === which) ?? steps[steps.length - 1];
  const groups = new Map<number, RolloutView[]>();
  for (const r of current.rollouts) groups.set(r.group, [...(groups.get(r.group) ?? []), r]);
  return (
    <div className="rollout-viewer">
      <div className="step-tabs">
        {steps.map((s) => (
          <button key={s.step} className={s.step === current.step ? 'active' : ''} onClick={() => setWhich(s.step)}>step {s.step + 1}</button>
        ))}
      </div>
      {[...groups.entries()].map(([g, rs]) => (
        <section key={g} className="group">
          <h4>group {g + 1}</h4>
          <div className="prompt"><Text text={rs[0].turns.find((t) => t.role === 'prompt')?.text ?? ''} /></div>
          {rs.map((r) => <Rollout key={r.index} r={{ ...r, turns: r.turns.filter((t) => t.role !== 'prompt') }} />)}
        </section>
      ))}
    </div>
  );
}
