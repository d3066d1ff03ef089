// Conversations of every step that kept rollouts, one step at a time (paged), grouped as GRPO groups
// them: the prompt, the model's turns, tool calls, environment responses, reward and advantage.
// Special tokens are drawn faintly. Steps, groups and rollouts are numbered from 1, as the progress
// bar and the charts' step axis count. A stored rollout of the wrong shape is listed as malformed.
// Screenshots a tool returned (browsergym-vlm) sit beside its text as thumbnails; a click enlarges one.
import { useEffect, useState } from 'react';
import { api } from '../api.ts';
import { formatNumber, splitSpecialTokens } from '../format.ts';
import { checkRollout, type CheckedRollout } from '../stored-rollout.ts';
import type { RolloutTurn, RolloutTurnImage, RolloutView } from '../../../workers/api.ts';

function Text({ text }: { text: string }) {
  return (
    <pre className="turn-text">
      {splitSpecialTokens(text).map((p, i) => (p.special ? <span key={i} className="special">{p.text}</span> : <span key={i}>{p.text}</span>))}
    </pre>
  );
}

/** The turn's screenshots as thumbnails; `onOpen` enlarges one. */
function Thumbnails({ turn, onOpen }: { turn: RolloutTurn; onOpen: (image: RolloutTurnImage) => void }) {
  if (!turn.images?.length && !turn.omittedImages) return null;
  return (
    <div className="thumbnails">
      {turn.images?.map((im, i) => (
        <button key={i} className="thumbnail" onClick={() => onOpen(im)} title="enlarge" data-testid="screenshot-thumbnail">
          <img src={im.src} width={im.width} height={im.height} alt={`screenshot ${i + 1} of ${turn.name ?? 'the tool'}'s result (${im.width}×${im.height})`} />
        </button>
      ))}
      {!!turn.omittedImages && <span className="muted">{turn.omittedImages} screenshot{turn.omittedImages === 1 ? '' : 's'} not kept (the run's storage budget for screenshots)</span>}
    </div>
  );
}

/** One screenshot enlarged over the page; a click or Escape closes it. */
function Enlarged({ image, onClose }: { image: RolloutTurnImage; onClose: () => void }) {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => e.key === 'Escape' && onClose();
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [onClose]);
  return (
    <div className="lightbox" role="dialog" aria-label="screenshot" onClick={onClose} data-testid="screenshot-enlarged">
      <img src={image.src} alt={`screenshot (${image.width}×${image.height})`} style={{ width: `min(92vw, ${image.width * 2}px)` }} />
    </div>
  );
}

function Rollout({ r }: { r: RolloutView }) {
  const [open, setOpen] = useState(false);
  const [enlarged, setEnlarged] = useState<RolloutTurnImage | null>(null);
  const adv = r.advantage;
  return (
    <div className="rollout" data-testid="rollout">
      <button className="rollout-head" onClick={() => setOpen(!open)}>
        <span>#{r.index + 1}</span>
        <span className="reward">reward {formatNumber(r.reward)}</span>
        <span className={adv > 0 ? 'adv pos' : adv < 0 ? 'adv neg' : 'adv'}>advantage {formatNumber(adv)}</span>
        <span className="calls">{r.turns.filter((t) => t.role === 'tool').length} tool calls</span>
        {r.error && <span className="error">unscorable: {r.error}</span>}
        {r.overBudget && <span className="error">tool results over budget</span>}
      </button>
      {open && (
        <div className="turns">
          {r.turns.map((t, i) => (
            <div key={i} className={`turn ${t.role}`}>
              <div className="role">{t.role === 'tool' ? `tool ${t.name ?? ''}` : t.role}</div>
              <div className="turn-body">
                <Thumbnails turn={t} onOpen={setEnlarged} />
                <Text text={t.text} />
              </div>
            </div>
          ))}
          {r.overBudget && (
            <p className="error" data-testid="over-budget">
              The results of the last tool call were rolled back: with them this completion would hold {r.overBudget.tokens} tokens,
              over its budget of {r.overBudget.budget} (max_completion_length, or the context left after the prompt). The env ran the call;
              the model never read what it returned, and the episode ended here.
            </p>
          )}
          {enlarged && <Enlarged image={enlarged} onClose={() => setEnlarged(null)} />}
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

/** Step tabs shown at once around the selected one (a long run pages through the rest). */
const TAB_WINDOW = 9;

/**
 * `steps`: every step that kept rollouts (stored and this tab's); `local`: the rollouts this tab
 * already holds (a live run's recent steps). Any other step's rollouts are fetched when it is picked.
 */
export function RolloutViewer({ runId, steps, local }: { runId: string; steps: number[]; local: { step: number; rollouts: unknown[] }[] }) {
  const [which, setWhich] = useState<number | null>(null);
  const [fetched, setFetched] = useState<Map<number, CheckedRollout[]>>(new Map());
  const [error, setError] = useState<string | null>(null);
  const all = [...new Set([...steps, ...local.map((l) => l.step)])].sort((a, b) => a - b);
  const current = which !== null && all.includes(which) ? which : all[all.length - 1];
  const held = local.find((l) => l.step === current);
  const rows = held ? held.rollouts.map((r, i) => checkRollout(r, i)) : current !== undefined ? fetched.get(current) : undefined;

  useEffect(() => {
    if (current === undefined || held || fetched.has(current)) return;
    let stop = false;
    api.stepRollouts(runId, current).then(
      (page) => !stop && setFetched((m) => new Map(m).set(current, page.rollouts.map((r) => checkRollout(r.data, r.index)))),
      (err) => !stop && setError(`Could not load the rollouts of step ${current + 1}: ${(err as Error).message}`),
    );
    return () => {
      stop = true;
    };
  }, [runId, current, held, fetched]);

  if (current === undefined) return <p className="muted">Rollouts appear after the first GRPO step.</p>;
  const at = all.indexOf(current);
  const from = Math.max(0, Math.min(at - Math.floor(TAB_WINDOW / 2), all.length - TAB_WINDOW));
  const pick = (step: number | undefined) => {
    if (step === undefined) return;
    setError(null);
    setWhich(step);
  };
  const good = (rows ?? []).filter((r): r is Extract<CheckedRollout, { ok: true }> => r.ok).map((r) => r.view);
  const bad = (rows ?? []).filter((r): r is Extract<CheckedRollout, { ok: false }> => !r.ok);
  const groups = new Map<number, RolloutView[]>();
  for (const r of good) groups.set(r.group, [...(groups.get(r.group) ?? []), r]);
  return (
    <div className="rollout-viewer">
      <div className="step-tabs" role="group" aria-label="rollout steps">
        <button disabled={at === 0} onClick={() => pick(all[0])} title="the first step with rollouts">first</button>
        <button disabled={at === 0} onClick={() => pick(all[at - 1])} data-testid="rollouts-earlier">‹ earlier</button>
        {all.slice(from, from + TAB_WINDOW).map((s) => (
          <button key={s} className={s === current ? 'active' : ''} onClick={() => pick(s)} data-testid="rollout-step-tab">step {s + 1}</button>
        ))}
        <button disabled={at === all.length - 1} onClick={() => pick(all[at + 1])} data-testid="rollouts-later">later ›</button>
        <button disabled={at === all.length - 1} onClick={() => pick(all[all.length - 1])}>latest</button>
        <span className="muted"> {all.length} steps with rollouts</span>
      </div>
      {error && <p className="error" role="alert">{error}</p>}
      {!rows && !error && <p className="muted">Loading the rollouts of step {current + 1}…</p>}
      {bad.length > 0 && (
        <ul className="malformed" data-testid="malformed-rollouts">
          {bad.map((b) => <li key={b.index} className="error">rollout #{b.index + 1} of step {current + 1} is malformed: {b.problem}</li>)}
        </ul>
      )}
      {[...groups.entries()].map(([g, rs]) => (
        <section key={g} className="group">
          <h4>group {g + 1}</h4>
          <div className="prompt"><Text text={rs[0]!.turns.find((t) => t.role === 'prompt')?.text ?? ''} /></div>
          {rs.map((r) => <Rollout key={r.index} r={{ ...r, turns: r.turns.filter((t) => t.role !== 'prompt') }} />)}
        </section>
      ))}
    </div>
  );
}
