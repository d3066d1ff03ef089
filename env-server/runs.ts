// The run store: every training run the app starts is kept in SQLite (config, per-step metrics,
// sampled rollouts, status) so it can be reopened, shared read-only by an unguessable share token,
// forked, exported and imported. better-sqlite3 is synchronous, so writes from concurrent requests are
// serialized by the event loop; WAL + busy_timeout also let several processes share one file.
// Write tokens are kept only as SHA-256 digests (compared in constant time), and the database file
// is the user's alone (0600). A run's share token (read only) is kept as is: its owner gets it back
// with the runs list, to build share links from any tab.
import Database from 'better-sqlite3';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ARTIFACT_BUNDLES, RUN_STATUSES, type ArtifactBundle, type ArtifactInfo, type CreatedRun, type RolloutRecord, type RunExport, type RunListEntry, type RunStatus, type RunSummary, type StepRecord } from './runs-wire.ts';

/** What a reader presents: a share token (share link) or the owner's write token. */
export interface ReadCredentials {
  shareToken?: string;
  writeToken?: string;
}

const ARTIFACT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export interface RunStoreOptions {
  /** A running/paused run with no write for this long is shown as interrupted (default 3 minutes). */
  staleAfterMs?: number;
  /** Bytes of artifacts one run may keep, all bundles together (default 40 MiB: as base64 JSON it fits one request body). */
  maxArtifactBytes?: number;
}

/** The live tab writes at least every 30 s (src/app/live-run.ts); a hidden tab's timer may lag to a minute. */
export const DEFAULT_STALE_AFTER_MS = 3 * 60_000;
/** Longest run name a rename accepts. */
export const MAX_NAME_LENGTH = 200;
export const DEFAULT_MAX_ARTIFACT_BYTES = 40 * 1024 * 1024;

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
  share_token TEXT,
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
CREATE TABLE IF NOT EXISTS run_parents (
  run_id TEXT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  parent_id TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS artifacts (
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  bundle TEXT NOT NULL,
  name TEXT NOT NULL,
  data BLOB NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (run_id, bundle, name)
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

/** Schema version in `PRAGMA user_version`: 1 = write tokens hashed, 2 = every run has a share token. */
const USER_VERSION = 2;

/** Equal strings, compared through their digests without an early exit: timing says nothing about a token. */
function sameSecret(given: string | undefined, keptDigest: string): boolean {
  const a = Buffer.from(tokenDigest(given ?? ''), 'hex');
  const b = Buffer.from(keptDigest, 'hex');
  return given !== undefined && given !== '' && a.length === b.length && timingSafeEqual(a, b);
}

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
  private readonly staleAfterMs: number;
  private readonly maxArtifactBytes: number;
  /** When this store opened (ms): live statuses written before it belong to a writer of an earlier server. */
  private readonly openedAt = Date.now();

  /** `file`: the SQLite file (or ':memory:'); other connections (the import worker) open it too. */
  constructor(readonly file: string, options: RunStoreOptions = {}) {
    this.staleAfterMs = options.staleAfterMs ?? DEFAULT_STALE_AFTER_MS;
    this.maxArtifactBytes = options.maxArtifactBytes ?? DEFAULT_MAX_ARTIFACT_BYTES;
    if (file !== ':memory:') ownerOnlyFile(file);
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.pragma('foreign_keys = ON');
    this.db.exec(SCHEMA);
    this.migrate();
    // The owner's runs list looks runs up by their write token's digest.
    this.db.exec('CREATE INDEX IF NOT EXISTS runs_by_write_token ON runs (write_token)');
  }

  /**
   * Older stores: plain write tokens are hashed once, in place (v1); runs from before share tokens
   * get one each (v2), so their old id-only links stop opening them: they are re-shared from the list.
   */
  private migrate(): void {
    const version = this.db.pragma('user_version', { simple: true }) as number;
    if (version >= USER_VERSION) return;
    this.db.transaction(() => {
      const rows = this.db.prepare('SELECT id, write_token FROM runs').all() as { id: string; write_token: string }[];
      const update = this.db.prepare('UPDATE runs SET write_token = ? WHERE id = ?');
      for (const row of rows) if (!/^[0-9a-f]{64}$/.test(row.write_token)) update.run(tokenDigest(row.write_token), row.id);
      const columns = this.db.prepare('PRAGMA table_info(runs)').all() as { name: string }[];
      if (!columns.some((c) => c.name === 'share_token')) this.db.exec('ALTER TABLE runs ADD COLUMN share_token TEXT');
      const share = this.db.prepare('UPDATE runs SET share_token = ? WHERE id = ?');
      for (const row of rows) share.run(newId(), row.id);
      this.db.pragma(`user_version = ${USER_VERSION}`);
    })();
  }

  close(): void {
    this.db.close();
  }

  create(input: { name?: string; config: Record<string, unknown>; model: Record<string, unknown>; env: Record<string, unknown> }): CreatedRun {
    const id = newId();
    const writeToken = newId();
    const shareToken = newId();
    const now = new Date().toISOString();
    this.db.prepare(
      'INSERT INTO runs (id, write_token, share_token, name, status, created_at, updated_at, config, model, env, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)',
    ).run(id, tokenDigest(writeToken), shareToken, input.name ?? 'untitled run', 'created', now, now, JSON.stringify(input.config), JSON.stringify(input.model), JSON.stringify(input.env));
    return { id, writeToken, shareToken };
  }

  /**
   * Lets a reader in: the run's share token or its write token; throws 404 for no such run and 403
   * naming what is missing otherwise. Returns the share token (the owner builds share links with it).
   */
  authorizeRead(id: string, given: ReadCredentials): string {
    const row = this.db.prepare('SELECT write_token, share_token FROM runs WHERE id = ?').get(id) as { write_token: string; share_token: string } | undefined;
    if (!row) throw new RunStoreError(`Run not found: ${id}`, 404);
    // Both compared, always: which one matched (or that neither did) takes the same time.
    const share = sameSecret(given.shareToken, tokenDigest(row.share_token));
    const write = sameSecret(given.writeToken, row.write_token);
    if (share || write) return row.share_token;
    const what = given.shareToken || given.writeToken ? 'the share token given does not match' : 'no share token was given';
    throw new RunStoreError(`Run ${id} can be read only through its share link (${what}); ask its owner for the link`, 403);
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
      interrupted: this.isInterrupted(row.status as RunStatus, row.updated_at as string),
      parent: this.parentOf(id),
    };
  }

  /**
   * A live status is a lease its writer renews (every step, or a heartbeat): one that lapsed (tab
   * closed, crashed, machine asleep) reads as interrupted, and so does one not renewed since this store
   * opened — after a restart no run is live until its tab writes again (its queued steps, or the
   * heartbeat), so a run nobody trains never reads as running.
   */
  private isInterrupted(status: RunStatus, updatedAt: string): boolean {
    const live = status === 'running' || status === 'paused' || status === 'created';
    const written = Date.parse(updatedAt);
    return live && (Date.now() - written > this.staleAfterMs || written < this.openedAt);
  }

  private parentOf(id: string): string | null {
    const row = this.db.prepare('SELECT parent_id FROM run_parents WHERE run_id = ?').get(id) as { parent_id: string } | undefined;
    return row?.parent_id ?? null;
  }

  /** Records the run a fork started from (the parent must exist; it stays readable by its own id). */
  setParent(id: string, token: string | undefined, parent: unknown): void {
    this.authorize(id, token);
    if (typeof parent !== 'string' || !this.db.prepare('SELECT 1 FROM runs WHERE id = ?').get(parent)) {
      throw new RunStoreError(`"parent" must be the id of a stored run, got ${JSON.stringify(parent)}`, 400);
    }
    this.db.prepare('INSERT OR REPLACE INTO run_parents (run_id, parent_id) VALUES (?, ?)').run(id, parent);
  }

  /**
   * Newest first: the home page's list of runs. `limit` 1–200, `offset` ≥ 0 (checked by the caller's
   * route). With `writeTokens`, only the runs those tokens write to (an owner's list); without, all.
   */
  list(opts: { limit: number; offset: number; writeTokens?: readonly string[] }): { runs: RunListEntry[]; total: number } {
    const owned = opts.writeTokens === undefined ? null : JSON.stringify(opts.writeTokens.map(tokenDigest));
    const where = owned === null ? '' : 'WHERE r.write_token IN (SELECT value FROM json_each(?))';
    const params = owned === null ? [] : [owned];
    const total = (this.db.prepare(`SELECT COUNT(*) AS n FROM runs r ${where}`).get(...params) as { n: number }).n;
    const rows = this.db.prepare(
      `SELECT r.id, r.name, r.status, r.created_at, r.updated_at, r.config, r.model, r.env, r.share_token, p.parent_id,
         (SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id) AS steps,
         (SELECT MAX(json_extract(s.metrics, '$.reward')) FROM steps s WHERE s.run_id = r.id AND COALESCE(json_extract(s.metrics, '$.phase_sft'), 0) = 0) AS best_reward,
         (SELECT MAX(json_extract(s.metrics, '$.success_rate')) FROM steps s WHERE s.run_id = r.id) AS best_success,
         (SELECT group_concat(a.bundle || '/' || a.name, ',') FROM artifacts a WHERE a.run_id = r.id) AS artifacts
       FROM runs r LEFT JOIN run_parents p ON p.run_id = r.id ${where}
       ORDER BY r.created_at DESC, r.id LIMIT ? OFFSET ?`,
    ).all(...params, opts.limit, opts.offset) as Record<string, string | number | null>[];
    const runs = rows.map((row): RunListEntry => {
      const config = JSON.parse(row.config as string) as Record<string, unknown>;
      const model = JSON.parse(row.model as string) as Record<string, unknown>;
      const env = JSON.parse(row.env as string) as Record<string, unknown>;
      const planned = [config.max_steps, config.sft_steps ?? 0];
      return {
        id: row.id as string,
        name: row.name as string,
        status: row.status as RunStatus,
        interrupted: this.isInterrupted(row.status as RunStatus, row.updated_at as string),
        task: String(env.task ?? env.name ?? ''),
        model: String(model.name ?? model.id ?? model.source ?? ''),
        trainMode: String(config.train_mode ?? 'lora'),
        steps: row.steps as number,
        totalSteps: planned.every((n) => Number.isInteger(n) && (n as number) >= 0) ? (planned[0] as number) + (planned[1] as number) : null,
        bestReward: (row.best_reward as number | null) ?? null,
        bestSuccessRate: (row.best_success as number | null) ?? null,
        createdAt: row.created_at as string,
        updatedAt: row.updated_at as string,
        parent: (row.parent_id as string | null) ?? null,
        artifacts: row.artifacts ? String(row.artifacts).split(',') : [],
        shareToken: row.share_token as string,
      };
    });
    return { runs, total };
  }

  /** Replaces one bundle of files kept with the run; the run's artifacts together stay under the size limit. */
  putArtifacts(id: string, token: string | undefined, bundle: unknown, files: { name: unknown; data: Buffer }[]): void {
    this.authorize(id, token);
    if (!ARTIFACT_BUNDLES.includes(bundle as ArtifactBundle)) throw new RunStoreError(`Unknown artifact bundle ${JSON.stringify(bundle)}; expected one of ${ARTIFACT_BUNDLES.join(', ')}`, 400);
    if (files.length === 0) throw new RunStoreError('An artifact upload needs at least one file', 400);
    for (const f of files) if (typeof f.name !== 'string' || !ARTIFACT_NAME.test(f.name)) throw new RunStoreError(`Artifact file name ${JSON.stringify(f.name)} is not allowed (letters, digits, . _ -)`, 400);
    const others = (this.db.prepare('SELECT COALESCE(SUM(length(data)), 0) AS n FROM artifacts WHERE run_id = ? AND bundle != ?').get(id, bundle) as { n: number }).n;
    const size = files.reduce((n, f) => n + f.data.length, 0);
    if (others + size > this.maxArtifactBytes) {
      throw new RunStoreError(`The ${bundle} files (${size} bytes) do not fit the run store's limit of ${this.maxArtifactBytes} bytes per run (${others} bytes already kept); download them from the training tab instead`, 413);
    }
    const now = new Date().toISOString();
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM artifacts WHERE run_id = ? AND bundle = ?').run(id, bundle);
      const ins = this.db.prepare('INSERT INTO artifacts (run_id, bundle, name, data, updated_at) VALUES (?, ?, ?, ?, ?)');
      for (const f of files) ins.run(id, bundle, f.name, f.data, now);
    })();
  }

  artifacts(id: string): ArtifactInfo[] {
    this.get(id);
    const rows = this.db.prepare('SELECT bundle, name, length(data) AS bytes, updated_at FROM artifacts WHERE run_id = ? ORDER BY bundle, name').all(id) as { bundle: ArtifactBundle; name: string; bytes: number; updated_at: string }[];
    return rows.map((r) => ({ bundle: r.bundle, name: r.name, bytes: r.bytes, updatedAt: r.updated_at }));
  }

  artifact(id: string, bundle: string, name: string): Buffer {
    this.get(id);
    const row = this.db.prepare('SELECT data FROM artifacts WHERE run_id = ? AND bundle = ? AND name = ?').get(id, bundle, name) as { data: Buffer } | undefined;
    if (!row) throw new RunStoreError(`Run ${id} keeps no ${bundle} file named ${JSON.stringify(name)}`, 404);
    return row.data;
  }

  /** The run's share token, for a caller already let in (a local tool). */
  shareTokenOf(id: string): string {
    const row = this.db.prepare('SELECT share_token FROM runs WHERE id = ?').get(id) as { share_token: string } | undefined;
    if (!row) throw new RunStoreError(`Run not found: ${id}`, 404);
    return row.share_token;
  }

  private authorize(id: string, token: string | undefined): void {
    const row = this.db.prepare('SELECT write_token FROM runs WHERE id = ?').get(id) as { write_token: string } | undefined;
    if (!row) throw new RunStoreError(`Run not found: ${id}`, 404);
    if (!sameSecret(token, row.write_token)) throw new RunStoreError('This run is read-only here: a valid write token is required', 403);
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

  /** Renames the run (owner only): 1 to 200 characters, no control characters, trimmed. */
  rename(id: string, token: string | undefined, name: unknown): void {
    this.authorize(id, token);
    const text = typeof name === 'string' ? name.trim() : '';
    if (text.length === 0 || text.length > MAX_NAME_LENGTH || /[\u0000-\u001f\u007f]/.test(text)) {
      throw new RunStoreError(`"name" must be a string of 1 to ${MAX_NAME_LENGTH} characters without control characters, got ${JSON.stringify(name)?.slice(0, 80)}`, 400);
    }
    // Not a write of the trainer: updated_at (which tells a live run from an interrupted one) stays.
    this.db.prepare('UPDATE runs SET name = ? WHERE id = ?').run(text, id);
  }

  /** Deletes the run with its steps, rollouts and files (owner only). Its forks keep their own data. */
  delete(id: string, token: string | undefined): void {
    this.authorize(id, token);
    this.db.prepare('DELETE FROM runs WHERE id = ?').run(id);
  }

  steps(id: string, afterStep = -1): StepRecord[] {
    this.get(id);
    const rows = this.db.prepare('SELECT step, metrics FROM steps WHERE run_id = ? AND step > ? ORDER BY step').all(id, afterStep) as { step: number; metrics: string }[];
    return rows.map((r) => ({ step: r.step, metrics: JSON.parse(r.metrics) }));
  }

  /** Rollouts of one step, of the steps in [from, to], or of the last `lastSteps` steps that have any. */
  rollouts(id: string, opts: { step?: number; from?: number; to?: number; lastSteps?: number } = {}): RolloutRecord[] {
    this.get(id);
    let rows: { step: number; idx: number; data: string }[];
    if (opts.step !== undefined) {
      rows = this.db.prepare('SELECT step, idx, data FROM rollouts WHERE run_id = ? AND step = ? ORDER BY idx').all(id, opts.step) as typeof rows;
    } else if (opts.from !== undefined || opts.to !== undefined) {
      rows = this.db.prepare('SELECT step, idx, data FROM rollouts WHERE run_id = ? AND step BETWEEN ? AND ? ORDER BY step, idx')
        .all(id, opts.from ?? 0, opts.to ?? Number.MAX_SAFE_INTEGER) as typeof rows;
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

  /** The steps that kept rollouts, in order (the rollout viewer pages through them). */
  rolloutSteps(id: string): number[] {
    this.get(id);
    return (this.db.prepare('SELECT DISTINCT step FROM rollouts WHERE run_id = ? ORDER BY step').all(id) as { step: number }[]).map((r) => r.step);
  }

  export(id: string): RunExport {
    const { id: _id, lastStep: _last, interrupted: _interrupted, parent: _parent, ...run } = this.get(id);
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
  import(data: unknown): CreatedRun {
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
    let created!: CreatedRun;
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
