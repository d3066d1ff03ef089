// pydantic 2's multi-line ValidationError text (`str(e)`), which OpenEnv passes through verbatim in
// MCP tool errors and JSON-RPC -32600 messages (specs/openenv-mcp.md §2.7, §3.2).

import { pyRepr, pyTypeName } from '../frames.ts';

export interface PydanticLine {
  loc: (string | number)[];
  msg: string;
  type: string;
  input: unknown;
}

/** `N validation error(s) for <title>` then, per error, its location, message and docs link. */
export function pydanticErrorText(title: string, errors: readonly PydanticLine[]): string {
  const n = errors.length;
  const head = `${n} validation error${n === 1 ? '' : 's'} for ${title}`;
  const lines = errors.map(
    (e) =>
      `${e.loc.join('.')}\n  ${e.msg} [type=${e.type}, input_value=${pyRepr(e.input)}, input_type=${pyTypeName(e.input)}]\n` +
      `    For further information visit https://errors.pydantic.dev/2.13/v/${e.type}`,
  );
  return [head, ...lines].join('\n');
}
