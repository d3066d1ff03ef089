// BrowserGym's MiniWoB episode contract, for a real MiniWoB++ page (specs/browsergym.md §5; read
// from BrowserGym's miniwob task, written here anew): the human display (goal text, timer, reward
// panel, click canvas, the START cover) leaves the DOM so the agent's tree and screenshot hold only
// the task; it comes back for the moments MiniWoB's core needs it (reading the goal, starting and
// ending the episode). The page is seeded with `Math.seedrandom(seed)` before the episode starts,
// so the same seed draws the same instance as on BrowserGym.

/** Evaluated once after the page loaded (its onload ran `core.startEpisode()`). */
export const HIDE_HUMAN_DISPLAY = `(() => {
  const ids = ['reward-display', 'click-canvas', 'sync-task-cover'];
  const kept = {};
  let query = '';
  const hide = () => {
    core.clearTimer();
    document.body.removeEventListener('click', core.canvasDrawClick);
    const q = document.getElementById('query');
    query = q.innerHTML;
    q.innerHTML = '';
    for (const id of ids) {
      const el = document.getElementById(id);
      if (el) { kept[id] = el; el.remove(); }
    }
  };
  const show = () => {
    document.getElementById('query').innerHTML = query;
    for (const id of ids) if (kept[id]) document.body.appendChild(kept[id]);
    core.createDisplay();
  };
  for (const name of ['getUtterance', 'endEpisode', 'startEpisodeReal']) {
    const original = core[name];
    core[name] = function (...args) {
      show();
      const result = original.apply(this, args);
      hide();
      return result;
    };
  }
  hide();
})()`;

/** Seeds the page and starts the episode with BrowserGym's time limit. */
export function startRealEpisode(seed: number, episodeMaxTimeMs: number): string {
  if (!Number.isInteger(seed) || !Number.isInteger(episodeMaxTimeMs)) throw new Error('startRealEpisode: integers only');
  return `Math.seedrandom(${seed}); core.EPISODE_MAX_TIME = ${episodeMaxTimeMs}; core.startEpisodeReal();`;
}

/** The goal as BrowserGym reads it: `core.getUtterance()`, or its `utterance` when a task returns a dict. */
export const READ_GOAL = `(() => {
  const u = core.getUtterance();
  return u !== null && typeof u === 'object' ? u.utterance : u;
})()`;
