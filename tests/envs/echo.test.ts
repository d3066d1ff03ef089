import { describe, expect, it } from 'vitest';
import { legacyEchoEnv as echoEnv } from '../../env-server/envs/legacy-echo.ts';
import { wire } from './wire.ts';

describe('echo env (legacy EchoAction/EchoObservation)', () => {
  it('reset returns the ready message with reward 0 and a fresh episode', () => {
    const env = echoEnv.create();
    const before = env.state().episode_id;
    const obs = wire(env.reset({ seed: 3, episode_id: 'ignored' }));
    expect(obs).toEqual({ observation: { echoed_message: 'Echo environment ready!', message_length: 0 }, reward: 0, done: false });
    const state = env.state();
    expect(Object.keys(state)).toEqual(['episode_id', 'step_count']);
    expect(state.step_count).toBe(0);
    expect(state.episode_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(state.episode_id).not.toBe(before);
    expect(state.episode_id).not.toBe('ignored');
  });

  it('rewards code points × 0.1 exactly as Python does', () => {
    const env = echoEnv.create();
    env.reset({});
    const abc = env.step({ message: 'abc' });
    expect(abc.reward).toBe(0.30000000000000004);
    expect(JSON.stringify(abc)).toBe('{"observation":{"echoed_message":"abc","message_length":3},"reward":0.30000000000000004,"done":false}');
    expect(env.step({ message: 'Hello, World!', metadata: { k: 'v' } })).toEqual({
      observation: { echoed_message: 'Hello, World!', message_length: 13 },
      reward: 1.3,
      done: false,
    });
    expect(env.step({ message: 'twelve chars' }).reward).toBe(1.2000000000000002);
    const accented = env.step({ message: 'héllo ✓' });
    expect(accented.observation.message_length).toBe(7);
    expect(accented.reward).toBe(0.7000000000000001);
    const emoji = env.step({ message: '😀' });
    expect(emoji.observation).toEqual({ echoed_message: '😀', message_length: 1 });
    expect(emoji.reward).toBe(0.1);
    expect(env.state().step_count).toBe(5);
  });

  it('is never done, even after many steps', () => {
    const env = echoEnv.create();
    env.reset({});
    for (let i = 0; i < 50; i++) expect(env.step({ message: 'x' }).done).toBe(false);
  });

  it('rejects an empty message with string_too_short', () => {
    expect(echoEnv.validateAction({ message: '' })).toEqual({
      ok: false,
      errors: [
        {
          type: 'string_too_short',
          loc: ['message'],
          msg: 'String should have at least 1 character',
          input: '',
          ctx: { min_length: 1 },
          url: 'https://errors.pydantic.dev/2.13/v/string_too_short',
        },
      ],
    });
    const env = echoEnv.create();
    expect(() => env.step({ message: '' })).toThrow('Invalid EchoAction: message: String should have at least 1 character');
  });

  it('reproduces the observed missing + extra_forbidden errors, in order', () => {
    const check = echoEnv.validateAction({ msg: 'x' });
    expect(JSON.stringify(check)).toBe(
      JSON.stringify({
        ok: false,
        errors: [
          { type: 'missing', loc: ['message'], msg: 'Field required', input: { msg: 'x' }, url: 'https://errors.pydantic.dev/2.13/v/missing' },
          { type: 'extra_forbidden', loc: ['msg'], msg: 'Extra inputs are not permitted', input: 'x', url: 'https://errors.pydantic.dev/2.13/v/extra_forbidden' },
        ],
      }),
    );
  });

  it('accepts metadata and fills it in', () => {
    expect(echoEnv.validateAction({ message: 'hi' })).toEqual({ ok: true, action: { metadata: {}, message: 'hi' } });
    expect(echoEnv.validateAction({ message: 'hi', metadata: { a: 1 } })).toEqual({ ok: true, action: { metadata: { a: 1 }, message: 'hi' } });
  });

  it('publishes metadata and pydantic-shaped schemas', () => {
    expect(echoEnv.metadata).toEqual({
      name: 'EchoEnvironment',
      description: 'EchoEnvironment environment',
      readme_content: null,
      version: '1.0.0',
      author: null,
      documentation_url: null,
    });
    const action = echoEnv.schema.action as Record<string, unknown>;
    expect(Object.keys(action)).toEqual(['additionalProperties', 'description', 'properties', 'required', 'title', 'type']);
    expect(action).toMatchObject({ additionalProperties: false, required: ['message'], title: 'EchoAction', type: 'object' });
    expect(Object.keys(action.properties as object)).toEqual(['metadata', 'message']);
    expect((action.properties as Record<string, unknown>).message).toEqual({
      description: 'Message to echo back',
      minLength: 1,
      title: 'Message',
      type: 'string',
    });
    const observation = echoEnv.schema.observation as Record<string, unknown>;
    expect(Object.keys(observation.properties as object)).toEqual(['done', 'reward', 'metadata', 'echoed_message', 'message_length']);
    const state = echoEnv.schema.state as Record<string, unknown>;
    expect(state).toMatchObject({ title: 'State', type: 'object', additionalProperties: true });
    expect(Object.keys(state.properties as object)).toEqual(['episode_id', 'step_count']);
  });
});
