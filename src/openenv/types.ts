// OpenEnv wire types (specs/openenv-protocol.md §1, §3, §6), shared by the client (browser and Node)
// and the env-server. Pure types: importing this module costs nothing at run time.

/** An observation as it goes on the wire: env fields (declaration order), reward, done. */
export interface StepResult<O = Record<string, unknown>> {
  observation: O;
  /** Python servers send `0.0` where JS sends `0`; both parse to the same number. */
  reward: number | boolean | null;
  done: boolean;
}

/** Error codes of `{"type":"error"}` frames (§3.3), plus the proxy's and client's own. */
export type WSErrorCode =
  | 'INVALID_JSON'
  | 'UNKNOWN_TYPE'
  | 'VALIDATION_ERROR'
  | 'EXECUTION_ERROR'
  | 'CAPACITY_REACHED'
  | 'FACTORY_ERROR'
  | 'SESSION_ERROR';

/** One pydantic-style validation error (§3.3): the shape the env-server's envs produce. */
export interface WireValidationIssue {
  type: string;
  loc: (string | number)[];
  msg: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
  /** pydantic's documentation link, e.g. `https://errors.pydantic.dev/2.13/v/missing`. */
  url?: string;
}

export interface ErrorFrameData {
  message: string;
  code: WSErrorCode;
  /** VALIDATION_ERROR only. */
  errors?: WireValidationIssue[];
  /** CAPACITY_REACHED only. */
  active_sessions?: number;
  max_sessions?: number;
  /** FACTORY_ERROR only. */
  factory_name?: string;
  /** webgrpo proxy: which upstream failed (`NAME URL`). */
  upstream?: string;
  [extra: string]: unknown;
}

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  method: string;
  params?: Record<string, unknown>;
  id?: string | number | null;
}

export interface JsonRpcError {
  code: number;
  message: string;
  data: unknown;
}

export type JsonRpcResponse =
  | { jsonrpc: '2.0'; id: string | number | null; result: unknown }
  | { jsonrpc: '2.0'; id: string | number | null; error: JsonRpcError };

/** Client → server frames (§3.2). */
export type ClientFrame =
  | { type: 'reset'; data?: Record<string, unknown> }
  | { type: 'step'; data: Record<string, unknown> }
  | { type: 'state' }
  | { type: 'close' }
  | { type: 'mcp'; data: JsonRpcRequest };

/** Server → client frames (§3.3). */
export type ServerFrame =
  | { type: 'observation'; data: StepResult }
  | { type: 'state'; data: Record<string, unknown> }
  | { type: 'mcp'; data: JsonRpcResponse }
  | { type: 'error'; data: ErrorFrameData };
