// Imports an environment-class module from its TEXT, the same way in Node (`--env-class FILE.mjs`) and in
// the browser (a module pasted into the app): the text becomes a `data:` URL module. Its imports are
// rewritten first (es-module-lexer finds them): `webgrpo/openenv` and other host modules become tiny
// modules re-exporting the host's own instances (so a class shares the trainer's OpenEnv client and its
// env URLs, and no .ts file has to be loadable by the runtime's native loader); relative imports resolve
// against the file's URL. Loading is bounded: a module whose top level never settles is cut off.

import { init, parse } from 'es-module-lexer';

export interface ModuleTextOptions {
  /** The module's own URL (a file: URL in Node): relative imports resolve against it. Absent: they are refused. */
  url?: string;
  /**
   * Reads an imported module's text by URL. Given, relative imports are loaded as text and rewritten the
   * same way (so a helper module shares the host's `webgrpo/openenv` too); absent, they are imported by URL.
   */
  readText?: (url: string) => Promise<string>;
  /** Bare specifiers the host provides, e.g. `{ 'webgrpo/openenv': await import('../../openenv/index.ts') }`. */
  hostModules?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** Cut-off for the module's evaluation (top-level await included), ms. */
  timeoutMs?: number;
  /** Named in errors (the file name, or "your environment"). */
  source?: string;
}

/** Where host module namespaces wait for the generated re-export modules to read them. */
const HOST_SLOT = Symbol.for('webgrpo.envClass.hostModules');
type HostSlots = Map<string, Readonly<Record<string, unknown>>>;

function hostSlots(): HostSlots {
  const g = globalThis as unknown as Record<symbol, HostSlots | undefined>;
  return (g[HOST_SLOT] ??= new Map());
}

function base64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

function dataUrl(text: string): string {
  return `data:text/javascript;base64,${base64(text)}`;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** A module that re-exports the host's namespace `name` (published under the global slot). */
function hostModuleUrl(specifier: string, namespace: Readonly<Record<string, unknown>>): string {
  hostSlots().set(specifier, namespace);
  const names = Object.keys(namespace).filter((k) => k !== 'default' && IDENTIFIER.test(k));
  const lines = [`const ns = globalThis[Symbol.for(${JSON.stringify(String(HOST_SLOT.description))})].get(${JSON.stringify(specifier)});`];
  if (names.length > 0) lines.push(`export const { ${names.join(', ')} } = ns;`);
  lines.push(`export default ns.default ?? ns;`);
  return dataUrl(lines.join('\n'));
}

/**
 * One load's rewritten relative imports by URL (a module imported twice is one instance), and the chain
 * of imports being rewritten (a cycle is refused: data: modules cannot refer back to each other).
 */
interface Loaded {
  done: Map<string, Promise<string>>;
  chain: string[];
}

/** The module text with every import specifier pointed at something a `data:` module can load. */
export async function rewriteImports(text: string, o: Omit<ModuleTextOptions, 'timeoutMs'> = {}, loaded: Loaded = { done: new Map(), chain: o.url ? [o.url] : [] }): Promise<string> {
  await init;
  let imports;
  try {
    [imports] = parse(text, o.source);
  } catch (err) {
    throw new Error(`${o.source ?? 'the environment module'} is not a JavaScript module: ${(err as Error).message}`);
  }
  let out = '';
  let at = 0;
  for (const imp of imports) {
    const spec = imp.n;
    // import.meta, and dynamic imports of computed names, are left as written.
    if (spec === undefined || imp.t === 3) continue;
    let target: string;
    if (o.hostModules && spec in o.hostModules) target = hostModuleUrl(spec, o.hostModules[spec]!);
    else if (/^\.{0,2}\//.test(spec)) {
      if (!o.url) throw new Error(`${o.source ?? 'the environment module'} imports '${spec}', a relative path, but it has no file to resolve it from (paste the helper into the module, or load it from a file)`);
      target = new URL(spec, o.url).href;
      if (o.readText) target = await importedModule(target, o, loaded);
    } else continue;
    // Dynamic imports' ranges cover the quotes; static ones do not.
    const quoted = text[imp.s] === '"' || text[imp.s] === "'" || text[imp.s] === '`';
    out += text.slice(at, imp.s) + (quoted ? JSON.stringify(target) : target);
    at = imp.e;
  }
  return out + text.slice(at);
}

/** A relative import as a rewritten `data:` module (read by `o.readText`). */
async function importedModule(url: string, o: Omit<ModuleTextOptions, 'timeoutMs'>, loaded: Loaded): Promise<string> {
  if (loaded.chain.includes(url)) throw new Error(`${o.source ?? 'the environment module'}: an import cycle through ${url} (an environment's helper modules must not import each other in a cycle)`);
  let done = loaded.done.get(url);
  if (!done) {
    const inner: Loaded = { done: loaded.done, chain: [...loaded.chain, url] };
    done = o.readText!(url).then((text) => rewriteImports(text, { ...o, url, source: url }, inner)).then(dataUrl);
    loaded.done.set(url, done);
  }
  return done;
}

/** Imports module text (see the file comment); the module's namespace. */
export async function importModuleText(text: string, o: ModuleTextOptions = {}): Promise<Record<string, unknown>> {
  const source = o.source ?? 'the environment module';
  const url = dataUrl(await rewriteImports(text, o));
  const loading = import(/* @vite-ignore */ url) as Promise<Record<string, unknown>>;
  const timeoutMs = o.timeoutMs ?? 60_000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const cutOff = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${source} did not finish loading within ${timeoutMs / 1000} s (a top-level await that never settles?)`)), timeoutMs);
  });
  try {
    return await Promise.race([loading, cutOff]);
  } catch (err) {
    if (err instanceof Error && err.message.startsWith(source)) throw err;
    throw new Error(`${source} failed to load: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  } finally {
    clearTimeout(timer);
  }
}
