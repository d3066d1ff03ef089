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
import { ARTIFACT_BUNDLES, RUN_STATUSES, type ArtifactBundle, type ArtifactInfo, type CreatedRun, type HeldOutSuccess, type RolloutRecord, type RunExport, type RunListEntry, type RunStatus, type RunSummary, type StepRecord } from './runs-wire.ts';
import { checkRunName } from './run-name.ts';
import { envClassProblem } from './run-env-class.ts';

export { MAX_NAME_LENGTH } from './run-name.ts';

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
  /** Rollouts one step may keep (default 4,096; `--max-rollouts-per-step`). */
  maxRolloutsPerStep?: number;
  /** Rollouts one run may keep, all steps together (default 250,000; `--max-rollouts-per-run`). */
  maxRolloutsPerRun?: number;
  /**
   * A connection that writes imports only: its commits do not wait for the disk (synchronous=NORMAL;
   * WAL stays consistent), so each batch holds the write lock for its inserts only. A power loss may
   * drop its last commits; an import cut short that way stays hidden and is removed as stale.
   */
  importer?: boolean;
}

/** The live tab writes at least every 30 s (src/app/live-run.ts); a hidden tab's timer may lag to a minute. */
export const DEFAULT_STALE_AFTER_MS = 3 * 60_000;
export const DEFAULT_MAX_ARTIFACT_BYTES = 40 * 1024 * 1024;
/**
 * The app keeps every rollout of a step (num_generations × prompts: tens, a few hundred at most); these
 * bound what one run costs to read, render and export, whoever wrote it.
 */
export const DEFAULT_MAX_ROLLOUTS_PER_STEP = 4096;
export const DEFAULT_MAX_ROLLOUTS_PER_RUN = 250_000;

/**
 * The status of a run whose import is still being written: no read, list or write sees it until the
 * import flips it to its real status at the end, and a failed import removes it. Not a RunStatus.
 */
const IMPORTING = 'importing';
/** An import renews its run's updated_at every batch; one silent this long died with its process. */
const IMPORT_LEASE_MS = 60_000;
/**
 * One import transaction writes at most this many rows, for at most this long: the write lock is
 * held that long at most, so the server's own writes (a live run's steps) wait that long at most.
 */
const IMPORT_BATCH_ROWS = 2000;
const IMPORT_BATCH_MS = 25;
/** Rows one delete of a discarded import removes per transaction (same reason). */
const DELETE_BATCH_ROWS = 5000;
/** Rows of one read of an export: the export is produced piece by piece, never as one big array. */
const EXPORT_CHUNK_ROWS = 500;

/** What an importer does between its transactions; false abandons the import (the server is stopping). */
export interface ImportPacing {
  between(batchMs: number): boolean;
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

/** Rows of runs anyone may see: every run but an import still being written. */
const VISIBLE = `status != '${IMPORTING}'`;

/** A run name by the one rule (run-name.ts), or a 400 naming the field. */
function checkedName(name: unknown, field: string): string {
  const checked = checkRunName(name);
  if (!checked.ok) throw new RunStoreError(`${field} ${checked.problem}`, 400);
  return checked.name;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** JSON cannot carry NaN/Infinity; metrics keep them as null (the charts show a gap). */
/** The runs list's mean reward is over the last this many GRPO steps: a run's level, not its luckiest step. */
export const RECENT_STEPS = 5;

/**
 * A step's held-out success, from its stored metrics ("STEP {json}"): the app's Evaluate (evaluate/*,
 * greedy, against the base) where there is one, else the trainer's eval loop (TRL's eval_*).
 */
function heldOutOf(text: string | null): HeldOutSuccess | null {
  if (!text) return null;
  const space = text.indexOf(' ');
  const m = JSON.parse(text.slice(space + 1)) as Record<string, number | null>;
  const [rate, low, high, episodes] = typeof m['evaluate/success_rate'] === 'number'
    ? [m['evaluate/success_rate'], m['evaluate/success_ci95_low'], m['evaluate/success_ci95_high'], m['evaluate/episodes']]
    : [m.eval_success_rate, m.eval_success_ci95_low, m.eval_success_ci95_high, m.eval_episodes];
  if (typeof rate !== 'number') return null;
  return { step: Number(text.slice(0, space)), successRate: rate, ci95: [low ?? 0, high ?? 1], episodes: episodes ?? null };
}

/**
 * A step keeps at most this many metrics, each named in at most MAX_METRIC_NAME characters: TRL's own
 * metrics plus per-reward and per-tool ones are a few dozen, and a merge (step-metrics) adds to a step
 * again and again, so without a cap one writer could grow a step's row without bound.
 */
export const MAX_METRICS_PER_STEP = 1024;
export const MAX_METRIC_NAME = 200;

function checkMetricCount(count: number, where: string): void {
  if (count > MAX_METRICS_PER_STEP) throw new RunStoreError(`${where}: ${count} metrics, over the run store's limit of ${MAX_METRICS_PER_STEP} per step`, 413);
}

function finiteMetrics(metrics: Record<string, unknown>, where: string): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  const entries = Object.entries(metrics);
  checkMetricCount(entries.length, where);
  for (const [k, v] of entries) {
    if (k.length > MAX_METRIC_NAME) throw new RunStoreError(`${where}: a metric name of ${k.length} characters (${JSON.stringify(k.slice(0, 40))}…); names are at most ${MAX_METRIC_NAME}`, 400);
    if (v === null || (typeof v === 'number' && !Number.isFinite(v))) out[k] = null;
    else if (typeof v === 'number') out[k] = v;
    else throw new RunStoreError(`${where}: metric '${k}' must be a number or null, got ${typeof v}`, 400);
  }
  return out;
}

export class RunStore {
  private db: Database.Database;
  private readonly staleAfterMs: number;
  readonly maxArtifactBytes: number;
  readonly maxRolloutsPerStep: number;
  readonly maxRolloutsPerRun: number;
  /** When this store opened (ms): live statuses written before it belong to a writer of an earlier server. */
  private readonly openedAt = Date.now();

  /** `file`: the SQLite file (or ':memory:'); other connections (the import worker) open it too. */
  constructor(readonly file: string, options: RunStoreOptions = {}) {
    this.staleAfterMs = options.staleAfterMs ?? DEFAULT_STALE_AFTER_MS;
    this.maxArtifactBytes = options.maxArtifactBytes ?? DEFAULT_MAX_ARTIFACT_BYTES;
    this.maxRolloutsPerStep = options.maxRolloutsPerStep ?? DEFAULT_MAX_ROLLOUTS_PER_STEP;
    this.maxRolloutsPerRun = options.maxRolloutsPerRun ?? DEFAULT_MAX_ROLLOUTS_PER_RUN;
    if (file !== ':memory:') ownerOnlyFile(file);
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.pragma('foreign_keys = ON');
    if (options.importer) this.db.pragma('synchronous = NORMAL');
    this.db.exec(SCHEMA);
    this.migrate();
    // The owner's runs list looks runs up by their write token's digest.
    this.db.exec('CREATE INDEX IF NOT EXISTS runs_by_write_token ON runs (write_token)');
    this.removeStaleImports();
  }

  /** Imports whose writer died (server killed mid-import): nobody ever saw them; their rows go. */
  private removeStaleImports(): void {
    const cutoff = new Date(Date.now() - IMPORT_LEASE_MS).toISOString();
    const stale = this.db.prepare('SELECT id FROM runs WHERE status = ? AND updated_at < ?').all(IMPORTING, cutoff) as { id: string }[];
    for (const { id } of stale) this.discardImport(id);
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

  /** A new run; `status` is for the importer only (its run stays hidden until written). */
  create(input: { name?: string; config: Record<string, unknown>; model: Record<string, unknown>; env: Record<string, unknown>; status?: typeof IMPORTING }): CreatedRun {
    const id = newId();
    const writeToken = newId();
    const shareToken = newId();
    const now = new Date().toISOString();
    const name = input.name === undefined ? 'untitled run' : checkedName(input.name, '"name"');
    const classProblem = envClassProblem(input.env);
    if (classProblem) throw new RunStoreError(classProblem, 400);
    this.db.prepare(
      'INSERT INTO runs (id, write_token, share_token, name, status, created_at, updated_at, config, model, env, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)',
    ).run(id, tokenDigest(writeToken), shareToken, name, input.status ?? 'created', now, now, JSON.stringify(input.config), JSON.stringify(input.model), JSON.stringify(input.env));
    return { id, writeToken, shareToken };
  }

  /**
   * Lets a reader in: the run's share token or its write token; throws 404 for no such run and 403
   * naming what is missing otherwise. Returns the share token (the owner builds share links with it).
   */
  authorizeRead(id: string, given: ReadCredentials): string {
    const row = this.db.prepare(`SELECT write_token, share_token FROM runs WHERE id = ? AND ${VISIBLE}`).get(id) as { write_token: string; share_token: string } | undefined;
    if (!row) throw new RunStoreError(`Run not found: ${id}`, 404);
    // Both compared, always: which one matched (or that neither did) takes the same time.
    const share = sameSecret(given.shareToken, tokenDigest(row.share_token));
    const write = sameSecret(given.writeToken, row.write_token);
    if (share || write) return row.share_token;
    const what = given.shareToken || given.writeToken ? 'the share token given does not match' : 'no share token was given';
    throw new RunStoreError(`Run ${id} can be read only through its share link (${what}); ask its owner for the link`, 403);
  }

  get(id: string): RunSummary {
    const row = this.db.prepare(`SELECT * FROM runs WHERE id = ? AND ${VISIBLE}`).get(id) as Record<string, string | null> | undefined;
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
    if (typeof parent !== 'string' || !this.db.prepare(`SELECT 1 FROM runs WHERE id = ? AND ${VISIBLE}`).get(parent)) {
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
    const where = `WHERE r.${VISIBLE}${owned === null ? '' : ' AND r.write_token IN (SELECT value FROM json_each(?))'}`;
    const params = owned === null ? [] : [owned];
    const total = (this.db.prepare(`SELECT COUNT(*) AS n FROM runs r ${where}`).get(...params) as { n: number }).n;
    const rows = this.db.prepare(
      `SELECT r.id, r.name, r.status, r.created_at, r.updated_at, r.config, r.model, r.env, r.share_token, p.parent_id,
         (SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id) AS steps,
         (SELECT AVG(x.reward) FROM (SELECT json_extract(s.metrics, '$.reward') AS reward FROM steps s WHERE s.run_id = r.id AND COALESCE(json_extract(s.metrics, '$.phase_sft'), 0) = 0 AND json_extract(s.metrics, '$.reward') IS NOT NULL ORDER BY s.step DESC LIMIT ${RECENT_STEPS}) x) AS recent_reward,
         (SELECT COUNT(*) FROM (SELECT 1 FROM steps s WHERE s.run_id = r.id AND COALESCE(json_extract(s.metrics, '$.phase_sft'), 0) = 0 AND json_extract(s.metrics, '$.reward') IS NOT NULL LIMIT ${RECENT_STEPS})) AS recent_steps,
         (SELECT s.step || ' ' || s.metrics FROM steps s WHERE s.run_id = r.id AND (json_extract(s.metrics, '$."evaluate/success_rate"') IS NOT NULL OR json_extract(s.metrics, '$.eval_success_rate') IS NOT NULL) ORDER BY s.step DESC LIMIT 1) AS held_out,
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
        recentReward: (row.recent_reward as number | null) ?? null,
        recentSteps: row.recent_steps as number,
        heldOut: heldOutOf(row.held_out as string | null),
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
    const row = this.db.prepare(`SELECT share_token FROM runs WHERE id = ? AND ${VISIBLE}`).get(id) as { share_token: string } | undefined;
    if (!row) throw new RunStoreError(`Run not found: ${id}`, 404);
    return row.share_token;
  }

  private authorize(id: string, token: string | undefined): void {
    const row = this.db.prepare(`SELECT write_token FROM runs WHERE id = ? AND ${VISIBLE}`).get(id) as { write_token: string } | undefined;
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
    this.checkStepRollouts(record.step, rollouts.length);
    const others = (this.db.prepare('SELECT COUNT(*) AS n FROM rollouts WHERE run_id = ? AND step != ?').get(id, record.step) as { n: number }).n;
    this.checkRunRollouts(others + rollouts.length);
    this.db.transaction(() => {
      this.db.prepare('INSERT OR REPLACE INTO steps (run_id, step, metrics) VALUES (?, ?, ?)').run(id, record.step, JSON.stringify(metrics));
      this.db.prepare('DELETE FROM rollouts WHERE run_id = ? AND step = ?').run(id, record.step);
      const ins = this.db.prepare('INSERT INTO rollouts (run_id, step, idx, data) VALUES (?, ?, ?, ?)');
      rollouts.forEach((r, i) => ins.run(id, record.step, i, JSON.stringify(r)));
      if ((this.get(id).status) === 'created') this.db.prepare("UPDATE runs SET status = 'running' WHERE id = ?").run(id);
      this.touch(id);
    })();
  }

  /**
   * Adds metrics to a stored step, keeping its others and its rollouts: an evaluation run after the
   * step (the app's Evaluate) is kept with the step it evaluated, and exports and share links carry it.
   */
  mergeStepMetrics(id: string, token: string | undefined, record: { step: number; metrics: Record<string, unknown> }): void {
    this.authorize(id, token);
    if (!Number.isInteger(record.step) || record.step < 0) throw new RunStoreError(`step must be a non-negative integer, got ${JSON.stringify(record.step)}`, 400);
    if (!isObject(record.metrics)) throw new RunStoreError('metrics must be an object', 400);
    const added = finiteMetrics(record.metrics, `step ${record.step}`);
    this.db.transaction(() => {
      const row = this.db.prepare('SELECT metrics FROM steps WHERE run_id = ? AND step = ?').get(id, record.step) as { metrics: string } | undefined;
      if (!row) throw new RunStoreError(`run ${id} has no step ${record.step} to add metrics to`, 404);
      const merged = { ...(JSON.parse(row.metrics) as Record<string, number | null>), ...added };
      checkMetricCount(Object.keys(merged).length, `step ${record.step}`);
      this.db.prepare('UPDATE steps SET metrics = ? WHERE run_id = ? AND step = ?').run(JSON.stringify(merged), id, record.step);
      this.touch(id);
    })();
  }

  private checkStepRollouts(step: number, count: number): void {
    if (count > this.maxRolloutsPerStep) {
      throw new RunStoreError(`step ${step} has ${count} rollouts, over the run store's limit of ${this.maxRolloutsPerStep} rollouts per step (--max-rollouts-per-step)`, 413);
    }
  }

  private checkRunRollouts(count: number): void {
    if (count > this.maxRolloutsPerRun) {
      throw new RunStoreError(`the run would keep ${count} rollouts, over the run store's limit of ${this.maxRolloutsPerRun} rollouts per run (--max-rollouts-per-run)`, 413);
    }
  }

  setStatus(id: string, token: string | undefined, status: RunStatus, error?: string): void {
    this.authorize(id, token);
    if (!RUN_STATUSES.includes(status)) throw new RunStoreError(`Unknown status '${status}'; expected one of ${RUN_STATUSES.join(', ')}`, 400);
    this.db.prepare('UPDATE runs SET status = ?, error = ?, updated_at = ? WHERE id = ?').run(status, error ?? null, new Date().toISOString(), id);
  }

  /** Renames the run (owner only), by the one name rule (run-name.ts): trimmed, 1 to 200 characters, no control characters or bidi overrides. */
  rename(id: string, token: string | undefined, name: unknown): void {
    this.authorize(id, token);
    const text = checkedName(name, '"name"');
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

  /**
   * Rollouts of one step, of the steps in [from, to], or of the last `lastSteps` steps that have any;
   * at most `limit` of them from `offset` on (a step may keep thousands: callers page through them).
   * `perStep` keeps only the first that many of each step (the exported page).
   */
  rollouts(id: string, opts: { step?: number; from?: number; to?: number; lastSteps?: number; limit?: number; offset?: number; perStep?: number } = {}): RolloutRecord[] {
    this.get(id);
    // SQLite reads LIMIT -1 as no limit.
    const page = [opts.limit ?? -1, opts.offset ?? 0];
    const perStep = opts.perStep ?? Number.MAX_SAFE_INTEGER;
    let rows: { step: number; idx: number; data: string }[];
    if (opts.step !== undefined) {
      rows = this.db.prepare('SELECT step, idx, data FROM rollouts WHERE run_id = ? AND step = ? AND idx < ? ORDER BY idx LIMIT ? OFFSET ?').all(id, opts.step, perStep, ...page) as typeof rows;
    } else if (opts.from !== undefined || opts.to !== undefined) {
      rows = this.db.prepare('SELECT step, idx, data FROM rollouts WHERE run_id = ? AND step BETWEEN ? AND ? AND idx < ? ORDER BY step, idx LIMIT ? OFFSET ?')
        .all(id, opts.from ?? 0, opts.to ?? Number.MAX_SAFE_INTEGER, perStep, ...page) as typeof rows;
    } else {
      const steps = this.distinctRolloutSteps(id, 'last', opts.lastSteps ?? 5);
      rows = this.db.prepare('SELECT step, idx, data FROM rollouts WHERE run_id = ? AND idx < ? AND step IN (SELECT value FROM json_each(?)) ORDER BY step, idx LIMIT ? OFFSET ?')
        .all(id, perStep, JSON.stringify(steps), ...page) as typeof rows;
    }
    return rows.map((r) => ({ step: r.step, index: r.idx, data: JSON.parse(r.data) }));
  }

  /** How many rollouts each of `steps` kept: its last index + 1 (a step's indexes run 0…n−1), one index lookup each. */
  rolloutCounts(id: string, steps: number[]): Map<number, number> {
    const last = this.db.prepare('SELECT MAX(idx) AS i FROM rollouts WHERE run_id = ? AND step = ?');
    return new Map(steps.map((step) => [step, ((last.get(id, step) as { i: number | null }).i ?? -1) + 1]));
  }

  /**
   * The distinct steps that kept rollouts, first to last (or the last `limit`, last first), one index
   * lookup per step: a DISTINCT would read every rollout of the run, and a step may keep thousands.
   */
  private distinctRolloutSteps(id: string, from: 'first' | 'last', limit = -1): number[] {
    const [agg, cmp] = from === 'first' ? ['MIN', '>'] : ['MAX', '<'];
    const rows = this.db.prepare(
      `WITH RECURSIVE s(step) AS (
         SELECT ${agg}(step) FROM rollouts WHERE run_id = @id
         UNION ALL SELECT (SELECT ${agg}(step) FROM rollouts WHERE run_id = @id AND step ${cmp} s.step) FROM s WHERE s.step IS NOT NULL
       ) SELECT step FROM s WHERE step IS NOT NULL LIMIT @limit`,
    ).all({ id, limit }) as { step: number }[];
    return rows.map((r) => r.step);
  }

  /** The steps that kept rollouts, in order (the rollout viewer pages through them). */
  rolloutSteps(id: string): number[] {
    this.get(id);
    return this.distinctRolloutSteps(id, 'first');
  }

  /**
   * The run as one export file, in pieces of at most EXPORT_CHUNK_ROWS rows each: a caller writes each
   * piece out before asking for the next, so neither the rows nor the text are ever all in memory,
   * and nothing holds the connection between pieces (each is its own query, resumed after the last
   * row it returned).
   */
  *exportText(id: string): Generator<string> {
    const { id: _id, lastStep: _last, interrupted: _interrupted, parent: _parent, ...run } = this.get(id);
    yield `{"format":"webgrpo-run","version":1,"run":${JSON.stringify(run)},"steps":[`;
    const steps = this.db.prepare('SELECT step, metrics FROM steps WHERE run_id = ? AND step > ? ORDER BY step LIMIT ?');
    let sep = '';
    for (let after = -1; ;) {
      const rows = steps.all(id, after, EXPORT_CHUNK_ROWS) as { step: number; metrics: string }[];
      if (rows.length === 0) break;
      yield sep + rows.map((r) => `{"step":${r.step},"metrics":${r.metrics}}`).join(',');
      sep = ',';
      after = rows[rows.length - 1].step;
    }
    yield '],"rollouts":[';
    const rollouts = this.db.prepare('SELECT step, idx, data FROM rollouts WHERE run_id = ? AND (step, idx) > (?, ?) ORDER BY step, idx LIMIT ?');
    sep = '';
    for (let after = [-1, -1]; ;) {
      const rows = rollouts.all(id, after[0], after[1], EXPORT_CHUNK_ROWS) as { step: number; idx: number; data: string }[];
      if (rows.length === 0) break;
      yield sep + rows.map((r) => `{"step":${r.step},"index":${r.idx},"data":${r.data}}`).join(',');
      sep = ',';
      after = [rows[rows.length - 1].step, rows[rows.length - 1].idx];
    }
    yield ']}';
  }

  export(id: string): RunExport {
    return JSON.parse([...this.exportText(id)].join('')) as RunExport;
  }

  /**
   * Imports an exported run as a new run (new id and tokens); rejects a malformed file with the reason,
   * before writing anything. The rows are then written in short transactions (IMPORT_BATCH_ROWS rows,
   * IMPORT_BATCH_MS at most) under a hidden status, `pacing.between` running after each; the run appears,
   * whole, only when the last one flips its status. A failure removes what was written.
   */
  import(data: unknown, pacing?: ImportPacing): CreatedRun {
    const run = this.checkExport(data);
    const created = this.create({ name: run.name, config: run.config, model: run.model, env: run.env, status: IMPORTING });
    try {
      const rows = importRows(run);
      const insStep = this.db.prepare('INSERT INTO steps (run_id, step, metrics) VALUES (?, ?, ?)');
      const insRollout = this.db.prepare('INSERT INTO rollouts (run_id, step, idx, data) VALUES (?, ?, ?, ?)');
      const batch = this.db.transaction(() => {
        const started = performance.now();
        let written = 0;
        for (let next = rows.next(); !next.done; next = rows.next()) {
          const row = next.value;
          if (row.kind === 'step') insStep.run(created.id, row.step, JSON.stringify(row.metrics));
          else insRollout.run(created.id, row.step, row.index, JSON.stringify(row.data));
          if (++written >= IMPORT_BATCH_ROWS || performance.now() - started >= IMPORT_BATCH_MS) break;
        }
        this.touch(created.id);
        return written;
      });
      for (;;) {
        const started = performance.now();
        if (batch() === 0) break;
        if (pacing && !pacing.between(performance.now() - started)) throw new RunStoreError('The import was abandoned: the server is stopping', 503);
      }
      // An imported run is a record, not a live run: "running" would never finish.
      const status = run.status === 'running' || run.status === 'created' ? 'stopped' : run.status;
      this.db.prepare('UPDATE runs SET status = ?, error = ?, updated_at = ? WHERE id = ?').run(status, run.error, new Date().toISOString(), created.id);
    } catch (err) {
      this.discardImport(created.id);
      throw err;
    }
    return created;
  }

  /** Removes a hidden import's rows a batch at a time (never one long transaction), then the run. */
  private discardImport(id: string): void {
    for (const table of ['rollouts', 'steps']) {
      const del = this.db.prepare(`DELETE FROM ${table} WHERE rowid IN (SELECT rowid FROM ${table} WHERE run_id = ? LIMIT ?)`);
      while (del.run(id, DELETE_BATCH_ROWS).changes > 0);
    }
    this.db.prepare('DELETE FROM runs WHERE id = ? AND status = ?').run(id, IMPORTING);
  }

  /** An export file, checked whole (shape, names, metrics, the rollout limits) before anything is written. */
  private checkExport(data: unknown): CheckedExport {
    const bad = (why: string, status = 400): never => { throw new RunStoreError(`Not a webgrpo run export: ${why}`, status); };
    if (!isObject(data)) bad('expected a JSON object');
    const d = data as Record<string, unknown>;
    if (d.format !== 'webgrpo-run') bad(`"format" must be "webgrpo-run", got ${JSON.stringify(d.format)}`);
    if (d.version !== 1) bad(`unsupported "version" ${JSON.stringify(d.version)} (this server reads version 1)`);
    if (!isObject(d.run)) bad('"run" must be an object');
    const run = d.run as Record<string, unknown>;
    for (const k of ['config', 'model', 'env'] as const) if (!isObject(run[k])) bad(`"run.${k}" must be an object`);
    if (run.status !== undefined && !RUN_STATUSES.includes(run.status as RunStatus)) bad(`"run.status" ${JSON.stringify(run.status)} is not a run status`);
    let name = 'imported run';
    if (run.name !== undefined) {
      const checked = checkRunName(run.name);
      if (!checked.ok) bad(`"run.name" ${checked.problem}`);
      else name = checked.name;
    }
    if (!Array.isArray(d.steps)) bad('"steps" must be an array');
    if (!Array.isArray(d.rollouts)) bad('"rollouts" must be an array');
    const steps: StepRecord[] = [];
    const seen = new Set<number>();
    (d.steps as unknown[]).forEach((s, i) => {
      if (!isObject(s) || !Number.isInteger(s.step) || !isObject(s.metrics)) bad(`steps[${i}] must be {step: integer, metrics: object}`);
      const step = (s as { step: number }).step;
      // A second record for a step would silently replace the first and drop its rollouts.
      if (seen.has(step)) bad(`steps[${i}] repeats step ${step}`);
      if (step < 0) bad(`steps[${i}].step must be ≥ 0, got ${step}`);
      seen.add(step);
      steps.push({ step, metrics: finiteMetrics((s as { metrics: Record<string, unknown> }).metrics, `steps[${i}]`) });
    });
    const rollouts = d.rollouts as unknown[];
    const byStep = new Map<number, Record<string, unknown>[]>();
    rollouts.forEach((r, i) => {
      if (!isObject(r) || !Number.isInteger(r.step) || !isObject(r.data)) bad(`rollouts[${i}] must be {step: integer, index, data: object}`);
      const { step, data: rollout } = r as { step: number; data: Record<string, unknown> };
      const list = byStep.get(step);
      if (list) list.push(rollout);
      else byStep.set(step, [rollout]);
    });
    try {
      for (const [step, list] of byStep) this.checkStepRollouts(step, list.length);
      this.checkRunRollouts(rollouts.length);
    } catch (err) {
      bad((err as RunStoreError).message, 413);
    }
    return {
      name,
      config: run.config as Record<string, unknown>,
      model: run.model as Record<string, unknown>,
      env: run.env as Record<string, unknown>,
      status: (run.status as RunStatus | undefined) ?? 'finished',
      error: typeof run.error === 'string' ? run.error : null,
      steps,
      rollouts: byStep,
    };
  }
}

/** An export file as checked: what the importer writes. */
interface CheckedExport {
  name: string;
  config: Record<string, unknown>;
  model: Record<string, unknown>;
  env: Record<string, unknown>;
  status: RunStatus;
  error: string | null;
  steps: StepRecord[];
  /** Rollouts by step, in file order (their index within the step is their place in this list). */
  rollouts: Map<number, Record<string, unknown>[]>;
}

type ImportRow = { kind: 'step'; step: number; metrics: Record<string, number | null> } | { kind: 'rollout'; step: number; index: number; data: Record<string, unknown> };

/** The rows an import writes, in order: each step with its rollouts, then rollouts of steps the file has no record of. */
function* importRows(run: CheckedExport): Generator<ImportRow> {
  const recorded = new Set<number>();
  for (const s of run.steps) {
    recorded.add(s.step);
    yield { kind: 'step', step: s.step, metrics: s.metrics };
    for (const [index, data] of (run.rollouts.get(s.step) ?? []).entries()) yield { kind: 'rollout', step: s.step, index, data };
  }
  for (const [step, list] of run.rollouts) {
    if (recorded.has(step)) continue;
    for (const [index, data] of list.entries()) yield { kind: 'rollout', step, index, data };
  }
}
