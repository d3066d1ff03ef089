// The contract between the env-server (transport: HTTP, /ws, /mcp, caps, proxy) and a built-in
// environment (rules only). Environments know nothing about sockets.

import type { WireValidationIssue } from '../../src/openenv/types.ts';

/** One pydantic-style validation error, as OpenEnv sends it (specs/openenv-protocol.md §3.3; the wire type of src/openenv). */
export type ValidationIssue = WireValidationIssue;

/** An observation as it goes on the wire: env fields (declaration order), reward, done. */
export interface WireObservation {
  observation: Record<string, unknown>;
  reward: number | null;
  done: boolean;
}

export type ActionCheck =
  | { ok: true; action: Record<string, unknown> }
  | { ok: false; errors: ValidationIssue[] };

export interface EnvMetadata {
  name: string;
  description: string;
  readme_content: string | null;
  version: string;
  author: string | null;
  documentation_url: string | null;
}

/** The five error kinds of an MCP tool call observation (specs/openenv-mcp.md §2.3). */
export type ToolErrorType = 'execution_error' | 'invalid_args' | 'transport_error' | 'tool_not_found' | 'timeout';

/** A tool call's outcome: FastMCP's call result, or a classified error (never both). */
export type ToolCallOutcome =
  | { result: Record<string, unknown>; error: null }
  | { result: null; error: { error_type: ToolErrorType; message: string } };

/** A live environment: one per session. Throwing from reset/step/state gives EXECUTION_ERROR with the message. */
export interface EnvInstance {
  /** kwargs are the reset frame's `data` (unvalidated); the env picks what it understands (e.g. `seed`). */
  reset(kwargs: Record<string, unknown>): WireObservation;
  step(action: Record<string, unknown>): WireObservation;
  state(): Record<string, unknown>;
  close(): void;
  /** MCP environments only: JSON-RPC `tools/list` items (no step counted). */
  listTools?(): Record<string, unknown>[];
  /** MCP environments only: JSON-RPC `tools/call` (no step counted, no reward). */
  callTool?(name: string, args: Record<string, unknown>): ToolCallOutcome;
}

/**
 * What the host accepts: an EnvInstance or one that answers with promises (an env driving something
 * outside the process, like browsergym's Chromium). The host runs one call at a time per session.
 */
export interface AnyEnvInstance extends McpToolEnv {
  reset(kwargs: Record<string, unknown>): WireObservation | Promise<WireObservation>;
  step(action: Record<string, unknown>): WireObservation | Promise<WireObservation>;
  state(): Record<string, unknown> | Promise<Record<string, unknown>>;
  close(): void | Promise<void>;
}

/** What JSON-RPC `tools/*` needs of an env (answered synchronously; an env without them is not MCP). */
export type McpToolEnv = Pick<EnvInstance, 'listTools' | 'callTool'>;

export interface EnvDefinition<I extends AnyEnvInstance = EnvInstance> {
  /** Path segment under /envs/ (echo, catch, wordle). */
  name: string;
  metadata: EnvMetadata;
  /** JSON Schemas for GET /schema. */
  schema: { action: unknown; observation: unknown; state: unknown };
  validateAction(data: unknown): ActionCheck;
  create(): I;
  /**
   * The env's own session cap (e.g. browsergym: browser contexts); the server's cap still applies.
   * Setting one marks instances as scarce: stateless HTTP calls then take a slot while they run,
   * and web pages may not open sessions over HTTP `/mcp` (builtin-http.ts).
   */
  maxConcurrentEnvs?: number;
  /** Frees what the env holds across sessions (browsergym's Chromium); called when the server closes. */
  dispose?(): Promise<void>;
}
