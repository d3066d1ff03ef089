// Dedicated module worker used by harness.ts: imports the requested entry module and runs its default export.
self.onmessage = async (e: MessageEvent<{ entry: string; args: unknown }>) => {
  try {
    const mod = await import(/* @vite-ignore */ e.data.entry);
    const result = await mod.default(e.data.args);
    (self as unknown as Worker).postMessage({ ok: true, result });
  } catch (err) {
    (self as unknown as Worker).postMessage({ ok: false, error: err instanceof Error ? `${err.message}\n${err.stack ?? ''}` : String(err) });
  }
};
