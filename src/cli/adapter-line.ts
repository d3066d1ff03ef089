// The WebGPU adapter a command runs on, said on its first stderr line (stdout stays JSON): with no
// variable set Node picks the fastest driver it finds (src/engine/gpu.ts nodeAdapterCandidates), and a
// step's time differs ~13× between lavapipe and SwiftShader, so the user must see which one it was.

import { isSoftwareAdapter, nodeAdapter, type NodeAdapter } from '../engine/gpu.ts';

/** For --help: how the adapter is chosen. */
export const ADAPTER_HELP = `WebGPU adapter (Node, through Dawn): a hardware GPU when Vulkan finds one, else Mesa's lavapipe when
its driver file exists (LAVAPIPE_ICD or /opt/lavapipe/lvp_icd.json, where .ci/run puts it), else
SwiftShader (Debian's chromium). WEBGPU_ADAPTER=swiftshader|lavapipe pins one; VK_ICD_FILENAMES picks
any Vulkan driver. The first stderr line names the one in use.`;

/** e.g. `WebGPU adapter lavapipe (llvmpipe: Mesa 25.0.7 (LLVM 15.0.6), software; WEBGPU_ADAPTER=swiftshader|lavapipe to pick)`. */
export function adapterSummary(a: NodeAdapter | null): string {
  if (!a) return 'no WebGPU adapter found';
  const { candidate, info } = a;
  const what = info.description || info.device || info.vendor || 'unknown adapter';
  const kind = isSoftwareAdapter(info) ? 'software' : 'hardware GPU';
  const name = candidate.kind === 'system' ? what : candidate.kind;
  const detail = candidate.kind === 'system' ? kind : `${what}, ${kind}`;
  const how = !candidate.pinned
    ? 'WEBGPU_ADAPTER=swiftshader|lavapipe to pick'
    : candidate.kind === 'system' ? 'the Vulkan driver VK_ICD_FILENAMES/VK_DRIVER_FILES names' : `WEBGPU_ADAPTER=${candidate.kind}`;
  return `WebGPU adapter ${name} (${detail}; ${how})`;
}

/** Writes `webgrpo COMMAND: [what, on ]WebGPU adapter …` to stderr; call before anything else goes there. */
export async function announceAdapter(command: string, what?: string): Promise<void> {
  const adapter = adapterSummary(await nodeAdapter());
  process.stderr.write(`webgrpo ${command}: ${what ? `${what}, on ${adapter}` : adapter}\n`);
}
