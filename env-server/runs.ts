// The run store: every training run the app starts is kept in SQLite (config, per-step metrics,
// sampled rollouts, status) so it can be reopened, shared read-only by an unguessable link, forked,
// exported and imported. better-sqlite3 is synchronous, so writes from concurrent requests are
// serialized by the event loop; WAL + busy_timeout also let several processes share one file.
// Write tokens are kept only as SHA-256 digests (compared in constant time), and the database file
// is the user's alone (0600).
import Database from 'better-sqlite3';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export type RunStatus = 'created' | 'running' | 'paused' | 'finished' | 'failed' | 'stopped';
export const RUN_STATUSES: readonly RunStatus[] = ['created', 'running', 'paused', 'finished', 'failed', 'stopped'];

export interface RunSummary {
  id: string;
  name: string;
  status: RunStatus;
  createdAt: string;
  updatedAt: string;
  /** GRPOConfig as the app used it (TRL names). */
  config: Record<string, unknown>;
  /** Model and environment descriptions ({id|source, …}, {name|url, …}). */
  model: Record<string, unknown>;
  env: Record<string, unknown>;
  error: string | null;
  lastStep: number | null;
}

export interface StepRecord {
  step: number;
  metrics: Record<string, number | null>;
}

export interface RolloutRecord {
  step: number;
  index: number;
  data: Record<string, unknown>;
}

export interface RunExport {
  format: 'webgrpo-run';
  version: 1;
  run: Omit<RunSummary, 'id' | 'lastStep'>;
  steps: StepRecord[];
  rollouts: RolloutRecord[];
}

export class RunStoreError extends Error {
  constructor(message: string, readonly status: number) {
    super(message);
    this.name = 'RunStoreError';
  }
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY,
  write_token TEXT NOT NULL,
  name TEXT NOT NULL,
  status TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  config TEXT NOT NULL,
  model TEXT NOT NULL,
  env TEXT NOT NULL,
  error TEXT
);
CREATE TABLE IF NOT EXISTS steps (
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  metrics TEXT NOT NULL,
  PRIMARY KEY (run_id, step)
);
CREATE TABLE IF NOT EXISTS rollouts (
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (run_id, step, idx)
);
`;

/** 128 random bits, URL-safe: share links must not be guessable. */
function newId(): string {
  return randomBytes(16).toString('base64url');
}

/** What the store keeps of a write token: its SHA-256, hex (64 characters). */
function tokenDigest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Schema version in `PRAGMA user_version`: 1 = write tokens hashed. */
const USER_VERSION = 1;

/** Creates the database file readable by its owner only; tightens an existing one (and its WAL files). */
function ownerOnlyFile(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  fs.closeSync(fs.openSync(file, 'a', 0o600));
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      if ((fs.statSync(f).mode & 0o077) !== 0) fs.chmodSync(f, 0o600);
    } catch {
      // -wal/-shm exist only while a connection is open.
    }
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** JSON cannot carry NaN/Infinity; metrics keep them as null (the charts show a gap). */
function finiteMetrics(metrics: Record<string, unknown>, where: string): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  for (const [k, v] of Object.entries(metrics)) {
    if (v === null || (typeof v === 'number' && !Number.isFinite(v))) out[k] = null;
    else if (typeof v === 'number') out[k] = v;
    else throw new RunStoreError(`${where}: metric '${k}' must be a number or null, got ${typeof v}`, 400);
  }
  return out;
}

export class RunStore {
  private db: Database.Database;

  /** `file`: the SQLite file (or ':memory:'); other connections (the import worker) open it too. */
  constructor(readonly file: string) {
    if (file !== ':memory:') ownerOnlyFile(file);
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.pragma('foreign_keys = ON');
    this.db.exec(SCHEMA);
    this.migrate();
  }

  /** Stores written before tokens were hashed keep plain tokens: hash them once, in place. */
  private migrate(): void {
    if ((this.db.pragma('user_version', { simple: true }) as number) >= USER_VERSION) return;
    this.db.transaction(() => {
      const rows = this.db.prepare('SELECT id, write_token FROM runs').all() as { id: string; write_token: string }[];
      const update = this.db.prepare('UPDATE runs SET write_token = ? WHERE id = ?');
      for (const row of rows) if (!/^[0-9a-f]{64}$/.test(row.write_token)) update.run(tokenDigest(row.write_token), row.id);
      this.db.pragma(`user_version = ${USER_VERSION}`);
    })();
  }

  close(): void {
    this.db.close();
  }

  create(input: { name?: string; config: Record<string, unknown>; model: Record<string, unknown>; env: Record<string, unknown> }): { id: string; writeToken: string } {
    const id = newId();
    const writeToken = newId();
    const now = new Date().toISOString();
    this.db.prepare(
      'INSERT INTO runs (id, write_token, name, status, created_at, updated_at, config, model, env, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)',
    ).run(id, tokenDigest(writeToken), input.name ?? 'untitled run', 'created', now, now, JSON.stringify(input.config), JSON.stringify(input.model), JSON.stringify(input.env));
    return { id, writeToken };
  }

  get(id: string): RunSummary {
    const row = this.db.prepare('SELECT * FROM runs WHERE id = ?').get(id) as Record<string, string | null> | undefined;
    if (!row) throw new RunStoreError(`Run not found: ${id}`, 404);
    const last = this.db.prepare('SELECT MAX(step) AS s FROM steps WHERE run_id = ?').get(id) as { s: number | null };
    return {
      id,
      name: row.name as string,
      status: row.status as RunStatus,
      createdAt: row.created_at as string,
      updatedAt: row.updated_at as string,
      config: JSON.parse(row.config as string),
      model: JSON.parse(row.model as string),
      env: JSON.parse(row.env as string),
      error: row.error,
      lastStep: last.s,
    };
  }

  private authorize(id: string, token: string | undefined): void {
    const row = this.db.prepare('SELECT write_token FROM runs WHERE id = ?').get(id) as { write_token: string } | undefined;
    if (!row) throw new RunStoreError(`Run not found: ${id}`, 404);
    const given = Buffer.from(tokenDigest(token ?? ''), 'hex');
    const kept = Buffer.from(row.write_token, 'hex');
    // Digests of equal length, compared without an early exit: timing says nothing about the token.
    const valid = token !== undefined && token !== '' && kept.length === given.length && timingSafeEqual(given, kept);
    if (!valid) throw new RunStoreError('This run is read-only here: a valid write token is required', 403);
  }

  private touch(id: string): void {
    this.db.prepare('UPDATE runs SET updated_at = ? WHERE id = ?').run(new Date().toISOString(), id);
  }

  /** Appends one step's metrics and (optionally) its sampled rollouts, atomically. Re-sending a step replaces it (resume after a crash). */
  appendStep(id: string, token: string | undefined, record: { step: number; metrics: Record<string, unknown>; rollouts?: Record<string, unknown>[] }): void {
    this.authorize(id, token);
    if (!Number.isInteger(record.step) || record.step < 0) throw new RunStoreError(`step must be a non-negative integer, got ${JSON.stringify(record.step)}`, 400);
    if (!isObject(record.metrics)) throw new RunStoreError('metrics must be an object', 400);
    const metrics = finiteMetrics(record.metrics, `step ${record.step}`);
    const rollouts = record.rollouts ?? [];
    if (!Array.isArray(rollouts) || !rollouts.every(isObject)) throw new RunStoreError('rollouts must be an array of objects', 400);
    this.db.transaction(() => {
      this.db.prepare('INSERT OR REPLACE INTO steps (run_id, step, metrics) VALUES (?, ?, ?)').run(id, record.step, JSON.stringify(metrics));
      this.db.prepare('DELETE FROM rollouts WHERE run_id = ? AND step = ?').run(id, record.step);
      const ins = this.db.prepare('INSERT INTO rollouts (run_id, step, idx, data) VALUES (?, ?, ?, ?)');
      rollouts.forEach((r, i) => ins.run(id, record.step, i, JSON.stringify(r)));
      if ((this.get(id).status) === 'created') this.db.prepare("UPDATE runs SET status = 'running' WHERE id = ?").run(id);
      this.touch(id);
    })();
  }

  setStatus(id: string, token: string | undefined, status: RunStatus, error?: string): void {
    this.authorize(id, token);
    if (!RUN_STATUSES.includes(status)) throw new RunStoreError(`Unknown status '${status}'; expected one of ${RUN_STATUSES.join(', ')}`, 400);
    this.db.prepare('UPDATE runs SET status = ?, error = ?, updated_at = ? WHERE id = ?').run(status, error ?? null, new Date().toISOString(), id);
  }

  steps(id: string, afterStep = -1): StepRecord[] {
    this.get(id);
    const rows = this.db.prepare('SELECT step, metrics FROM steps WHERE run_id = ? AND step > ? ORDER BY step').all(id, afterStep) as { step: number; metrics: string }[];
    return rows.map((r) => ({ step: r.step, metrics: JSON.parse(r.metrics) }));
  }

  /** Rollouts of one step, or of the last `lastSteps` steps that have any. */
  rollouts(id: string, opts: { step?: number; lastSteps?: number } = {}): RolloutRecord[] {
    this.get(id);
    let rows: { step: number; idx: number; data: string }[];
    if (opts.step !== undefined) {
      rows = this.db.prepare('SELECT step, idx, data FROM rollouts WHERE run_id = ? AND step = ? ORDER BY idx').all(id, opts.step) as typeof rows;
    } else {
      const n = opts.lastSteps ?? 5;
      rows = this.db.prepare(
        `SELECT step, idx, data FROM rollouts WHERE run_id = ? AND step IN
           (SELECT DISTINCT step FROM rollouts WHERE run_id = ? ORDER BY step DESC LIMIT ?)
         ORDER BY step, idx`,
      ).all(id, id, n) as typeof rows;
    }
    return rows.map((r) => ({ step: r.step, index: r.idx, data: JSON.parse(r.data) }));
  }

  export(id: string): RunExport {
    const { id: _id, lastStep: _last, ...run } = this.get(id);
    const rows = this.db.prepare('SELECT step, idx, data FROM rollouts WHERE run_id = ? ORDER BY step, idx').all(id) as { step: number; idx: number; data: string }[];
    return {
      format: 'webgrpo-run',
      version: 1,
      run,
      steps: this.steps(id),
      rollouts: rows.map((r) => ({ step: r.step, index: r.idx, data: JSON.parse(r.data) })),
    };
  }

  /** Imports an exported run as a new run (new id and token); rejects malformed files with the reason. */
  import(data: unknown): { id: string; writeToken: string } {
    const bad = (why: string): never => { throw new RunStoreError(`Not a webgrpo run export: ${why}`, 400); };
    if (!isObject(data)) bad('expected a JSON object');
    const d = data as Record<string, unknown>;
    if (d.format !== 'webgrpo-run') bad(`"format" must be "webgrpo-run", got ${JSON.stringify(d.format)}`);
    if (d.version !== 1) bad(`unsupported "version" ${JSON.stringify(d.version)} (this server reads version 1)`);
    if (!isObject(d.run)) bad('"run" must be an object');
    const run = d.run as Record<string, unknown>;
    for (const k of ['config', 'model', 'env'] as const) if (!isObject(run[k])) bad(`"run.${k}" must be an object`);
    if (run.status !== undefined && !RUN_STATUSES.includes(run.status as RunStatus)) bad(`"run.status" ${JSON.stringify(run.status)} is not a run status`);
    if (!Array.isArray(d.steps)) bad('"steps" must be an array');
    if (!Array.isArray(d.rollouts)) bad('"rollouts" must be an array');
    const steps = d.steps as unknown[];
    const seen = new Set<number>();
    steps.forEach((s, i) => {
      if (!isObject(s) || !Number.isInteger(s.step) || !isObject(s.metrics)) bad(`steps[${i}] must be {step: integer, metrics: object}`);
      const step = (s as { step: number }).step;
      // A second record for a step would silently replace the first and drop its rollouts.
      if (seen.has(step)) bad(`steps[${i}] repeats step ${step}`);
      seen.add(step);
    });
    const rollouts = d.rollouts as unknown[];
    rollouts.forEach((r, i) => {
      if (!isObject(r) || !Number.isInteger(r.step) || !isObject(r.data)) bad(`rollouts[${i}] must be {step: integer, index, data: object}`);
    });
    let created!: { id: string; writeToken: string };
    this.db.transaction(() => {
      created = this.create({
        name: typeof run.name === 'string' ? run.name : 'imported run',
        config: run.config as Record<string, unknown>,
        model: run.model as Record<string, unknown>,
        env: run.env as Record<string, unknown>,
      });
      const byStep = new Map<number, Record<string, unknown>[]>();
      for (const r of rollouts as RolloutRecord[]) {
        const list = byStep.get(r.step);
        if (list) list.push(r.data);
        else byStep.set(r.step, [r.data]);
      }
      for (const s of steps as StepRecord[]) {
        this.appendStep(created.id, created.writeToken, { step: s.step, metrics: s.metrics, rollouts: byStep.get(s.step) });
        byStep.delete(s.step);
      }
      const ins = this.db.prepare('INSERT INTO rollouts (run_id, step, idx, data) VALUES (?, ?, ?, ?)');
      for (const [step, list] of byStep) list.forEach((r, i) => ins.run(created.id, step, i, JSON.stringify(r)));
      const status = (run.status as RunStatus | undefined) ?? 'finished';
      // An imported run is a record, not a live run: "running" would never finish.
      this.setStatus(created.id, created.writeToken, status === 'running' || status === 'created' ? 'stopped' : status,
        typeof run.error === 'string' ? run.error : undefined);
    })();
    return created;
  }
}
