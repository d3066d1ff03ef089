// Which WebGPU driver Node tries, fastest first (src/engine/gpu.ts nodeAdapterCandidates, a pure function
// of what the machine has), and the line the CLI names it with (src/cli/adapter-line.ts).

import { describe, expect, it } from 'vitest';
import { run as webgrpo } from '../../src/cli/main.ts';
import { captureCliLines } from '../cli-capture.ts';
import { adapterSummary, ADAPTER_HELP } from '../../src/cli/adapter-line.ts';
import { nodeAdapterCandidates, type NodeAdapterFacts } from '../../src/engine/gpu.ts';

const LVP = '/opt/lavapipe/lvp_icd.json';
const SWS = '/usr/lib/chromium/vk_swiftshader_icd.json';
const facts = (over: Partial<NodeAdapterFacts> = {}): NodeAdapterFacts => ({ requested: null, vulkanConfigured: false, gpuDeviceNode: false, icds: { lavapipe: LVP, swiftshader: SWS }, ...over });

describe('nodeAdapterCandidates', () => {
  it('no GPU, both CPU drivers: lavapipe first, SwiftShader after (not SwiftShader alone, as before)', () => {
    expect(nodeAdapterCandidates(facts())).toEqual([
      { kind: 'lavapipe', icd: LVP, pinned: false },
      { kind: 'swiftshader', icd: SWS, pinned: false },
    ]);
  });

  it('a GPU device node: Vulkan\'s own (hardware) driver first, the CPU drivers as fallbacks', () => {
    expect(nodeAdapterCandidates(facts({ gpuDeviceNode: true })).map((c) => c.kind)).toEqual(['system', 'lavapipe', 'swiftshader']);
  });

  it('no lavapipe: SwiftShader; no CPU driver at all: whatever Vulkan finds', () => {
    expect(nodeAdapterCandidates(facts({ icds: { swiftshader: SWS } }))).toEqual([{ kind: 'swiftshader', icd: SWS, pinned: false }]);
    expect(nodeAdapterCandidates(facts({ icds: {} }))).toEqual([{ kind: 'system', pinned: false }]);
  });

  it('WEBGPU_ADAPTER pins one driver over everything else; its missing driver is an error, never a fallback', () => {
    expect(nodeAdapterCandidates(facts({ requested: 'swiftshader', gpuDeviceNode: true, vulkanConfigured: true }))).toEqual([{ kind: 'swiftshader', icd: SWS, pinned: true }]);
    expect(nodeAdapterCandidates(facts({ requested: 'lavapipe' }))).toEqual([{ kind: 'lavapipe', icd: LVP, pinned: true }]);
    expect(() => nodeAdapterCandidates(facts({ requested: 'lavapipe', icds: { swiftshader: SWS } }))).toThrow(/WEBGPU_ADAPTER=lavapipe but its Vulkan driver file .* does not exist \(run \.ci\/run, or set LAVAPIPE_ICD\)/);
  });

  it('VK_ICD_FILENAMES / VK_DRIVER_FILES: the user\'s driver, as configured', () => {
    expect(nodeAdapterCandidates(facts({ vulkanConfigured: true }))).toEqual([{ kind: 'system', pinned: true }]);
  });
});

describe('adapterSummary', () => {
  const llvmpipe = { vendor: 'mesa', architecture: 'software', device: 'llvmpipe', description: 'llvmpipe: Mesa 25.0.7 (LLVM 15.0.6)', isFallbackAdapter: true };
  const h100 = { vendor: 'nvidia', architecture: 'hopper', device: 'NVIDIA H100', description: 'NVIDIA H100 80GB HBM3', isFallbackAdapter: false };

  it('names the driver, the adapter, software or hardware, and how to pick another', () => {
    expect(adapterSummary({ candidate: { kind: 'lavapipe', icd: '/x', pinned: false }, info: llvmpipe }))
      .toBe('WebGPU adapter lavapipe (llvmpipe: Mesa 25.0.7 (LLVM 15.0.6), software; WEBGPU_ADAPTER=swiftshader|lavapipe to pick)');
    expect(adapterSummary({ candidate: { kind: 'lavapipe', icd: '/x', pinned: true }, info: llvmpipe }))
      .toBe('WebGPU adapter lavapipe (llvmpipe: Mesa 25.0.7 (LLVM 15.0.6), software; WEBGPU_ADAPTER=lavapipe)');
    expect(adapterSummary({ candidate: { kind: 'system', pinned: false }, info: h100 }))
      .toBe('WebGPU adapter NVIDIA H100 80GB HBM3 (hardware GPU; WEBGPU_ADAPTER=swiftshader|lavapipe to pick)');
    expect(adapterSummary({ candidate: { kind: 'system', pinned: true }, info: h100 }))
      .toBe('WebGPU adapter NVIDIA H100 80GB HBM3 (hardware GPU; the Vulkan driver VK_ICD_FILENAMES/VK_DRIVER_FILES names)');
    expect(adapterSummary(null)).toBe('no WebGPU adapter found');
  });

  it('--help says how the adapter is chosen, for every command that uses the GPU', async () => {
    expect(ADAPTER_HELP).toMatch(/hardware GPU.*\n.*lavapipe[\s\S]*SwiftShader[\s\S]*WEBGPU_ADAPTER=swiftshader\|lavapipe pins one/);
    for (const command of ['train', 'generate', 'score', 'bench']) {
      const { code, lines } = await captureCliLines(() => webgrpo([command, '--help']));
      expect([command, code, lines.join('\n').includes(ADAPTER_HELP)]).toEqual([command, 0, true]);
    }
    expect((await captureCliLines(() => webgrpo(['--help']))).lines.join('\n')).toContain('name their WebGPU adapter\non their first stderr line');
  }, 120_000); // loads four command modules (train's is large) on a busy machine
});
