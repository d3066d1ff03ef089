// Public entry of the OpenEnv client: `import { connect, withEpisode } from './index.ts'`.
export { connect, OpenEnvSession, type ConnectOptions } from './client.ts';
export { withEpisode, type EpisodeOptions } from './with-episode.ts';
export { OpenEnvError, serverErrorText, type OpenEnvErrorCode } from './errors.ts';
export { wsUrl } from './url.ts';
export type * from './types.ts';
export { McpToolError, detectProtocol, isCallToolObservation, parseToolList, protocolFromSchema, rpcToolResult, toolCallValue, toolResultText, type EnvProtocol, type McpTool, type McpToolErrorType } from './mcp.ts';
export { envProtocol, wsMcpProbe } from './protocol.ts';
export { HttpEpisode, httpBaseUrl, lacksWsRoute } from './http-episode.ts';
export { EnvClient, envUrl, setEnvUrls, type EnvClientOptions, type ToolCallResult } from './env-client.ts';
