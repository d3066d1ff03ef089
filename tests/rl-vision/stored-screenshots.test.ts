// Screenshots as a run keeps them: PNG data URLs within the per-step and per-run budgets, and a stored
// (or imported) rollout whose images are anything but inline PNG/JPEG is reported as malformed.
import { describe, expect, it } from 'vitest';
import { unzlibSync } from 'fflate';
import { checkRollout } from '../../src/app/stored-rollout.ts';
import { encodePng } from '../../workers/png.ts';
import { ScreenshotBudget } from '../../workers/stored-screenshots.ts';

const image = (w: number, h: number) => ({ width: w, height: h, rgba: new Uint8Array(w * h * 4).map((_, i) => (i * 37) % 256) });

describe('stored screenshots', () => {
  it('PNG: signature, IHDR size, RGB rows that inflate back to the pixels', () => {
    const png = encodePng(image(3, 2));
    expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    const view = new DataView(png.buffer);
    expect([view.getUint32(16), view.getUint32(20)]).toEqual([3, 2]);
    const idatLength = view.getUint32(33);
    const rows = unzlibSync(png.subarray(41, 41 + idatLength));
    expect(rows.length).toBe(2 * (1 + 3 * 3));
    expect([...rows.subarray(1, 4)]).toEqual([0, 37, 74]);
  });

  it('keeps images within the step and run budgets, scaled to 512 at most', () => {
    const probe = new ScreenshotBudget(1e9, 1e9);
    probe.step();
    const big = probe.keep(image(1024, 300))!;
    expect([big.width, big.height]).toEqual([512, 150]);
    const n = big.src.length;
    const perRun = new ScreenshotBudget(10 * n, 1.5 * n);
    perRun.step();
    expect(perRun.keep(image(1024, 300))).toEqual(big);
    perRun.step();
    expect(perRun.keep(image(1024, 300))).toBeNull(); // past the run's budget
    const perStep = new ScreenshotBudget(1.5 * n, 10 * n);
    perStep.step();
    expect(perStep.keep(image(1024, 300))).not.toBeNull();
    expect(perStep.keep(image(1024, 300))).toBeNull(); // past the step's budget
    perStep.step();
    expect(perStep.keep(image(1024, 300))).not.toBeNull();
    expect(new ScreenshotBudget(100, 1000).keep(image(4, 4))).toBeNull(); // step() not called: nothing left this step
  });

  it('a stored turn image must be an inline PNG/JPEG data URL with its size', () => {
    const view = (images: unknown) => ({ group: 0, index: 0, turns: [{ role: 'tool', text: 't', images }], reward: 1, advantage: 0, rewards: {} });
    expect(checkRollout(view([{ src: 'data:image/png;base64,iVBORw0=', width: 2, height: 2 }]), 0).ok).toBe(true);
    expect(checkRollout(view([{ src: 'https://tracker.example/x.png', width: 2, height: 2 }]), 0)).toEqual({ ok: false, index: 0, problem: 'turns[0].images[0] src must be a data:image/png or data:image/jpeg base64 URL' });
    expect(checkRollout(view([{ src: 'data:image/png;base64,AA==', width: 0, height: 2 }]), 0)).toMatchObject({ ok: false });
  });

  it('a stored overBudget is {tokens, budget} or the rollout is shown as malformed', () => {
    const view = (overBudget: unknown) => ({ group: 0, index: 0, turns: [], reward: 0, advantage: 0, rewards: {}, overBudget });
    expect(checkRollout(view({ tokens: 640, budget: 600 }), 0).ok).toBe(true);
    expect(checkRollout(view({ tokens: '640', budget: 600 }), 3)).toEqual({ ok: false, index: 3, problem: '"overBudget" must be {"tokens", "budget"} (non-negative integers)' });
  });
});
