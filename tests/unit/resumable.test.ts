// Which runs offer "resume" (issue 33): an interrupted run, as before, and now a stopped run whose
// checkpoint is kept with it; not a stopped run without one, nor a finished, failed or live run.
import { describe, expect, it } from 'vitest';
import { resumable } from '../../src/app/resumable.ts';

const listed = ['checkpoint/engine_state.safetensors', 'checkpoint/run-checkpoint.json', 'model/model.safetensors'];
const viewed = [{ bundle: 'adapter' }, { bundle: 'checkpoint' }];

describe('resumable', () => {
  it('resumes a stopped run from the checkpoint kept with it (runs list and run view alike)', () => {
    expect(resumable(null, 'stopped', listed)).toBe('stopped');
    expect(resumable(null, 'stopped', viewed)).toBe('stopped');
  });

  it('keeps resuming interrupted runs, checkpoint or not (the browser may keep one of its own)', () => {
    expect(resumable('interrupted', 'running', [])).toBe('interrupted');
    expect(resumable('interrupted', 'paused', listed)).toBe('interrupted');
  });

  it('offers nothing for a stopped run without a checkpoint, nor for finished, failed or live runs', () => {
    expect(resumable(null, 'stopped', ['model/model.safetensors', 'adapter/adapter_config.json'])).toBeNull();
    expect(resumable(null, 'stopped', [{ bundle: 'model' }])).toBeNull();
    for (const status of ['finished', 'failed', 'created']) expect(resumable(null, status, listed), status).toBeNull();
    expect(resumable('here', 'running', listed)).toBeNull();
    expect(resumable('other-tab', 'running', listed)).toBeNull();
  });
});
