// What an agent was trained with besides its weights: the chat template variables (TRL's
// `chat_template_kwargs`, e.g. `enable_thinking: false`) and the env's tool schemas, exactly as the
// rollouts rendered them. Rendered without them, a trained echo agent sees thinking on and no `echo`
// tool, and answers without calling one.
//
// transformers.js's apply_chat_template takes the template from tokenizer_config.json but no variables
// and no tools (it renders only what the caller passes), so an exported model folder stores both in
// tokenizer_config.json under `chat_template_kwargs` and `tools`: `tokenizer.config` in transformers.js
// (`tokenizer.init_kwargs` in Python) hands them back for the call:
//   tok.apply_chat_template(messages, { tools, ...chat_template_kwargs, add_generation_prompt: true })
// A PEFT adapter carries them in its weights file's safetensors metadata (PEFT reads none of it), so
// `webgrpo export onnx --adapter` puts them in the folder it writes.

/**
 * A tool schema as the chat template takes it (OpenAI's function form). Export sits below rl/ in the
 * layers, so it names the shape it writes rather than importing rl's ToolSchema (which fits it).
 */
export interface ToolSchema {
  type: 'function';
  function: { name: string; description?: string; parameters?: unknown };
}

export interface TrainedChat {
  chat_template_kwargs: Record<string, unknown> | null;
  /** The tool schemas the model saw; null where the run's tools are not known (a bare trainer checkpoint). */
  tools: ToolSchema[] | null;
}

/** A run's chat: its config's template variables and its bound task's tools. */
export function trainedChat(config: { chat_template_kwargs: Record<string, unknown> | null }, task: { tools: readonly ToolSchema[] }): TrainedChat {
  return { chat_template_kwargs: config.chat_template_kwargs, tools: [...task.tools] };
}

/** The adapter weights file's metadata keys (safetensors metadata values are strings: JSON here). */
const METADATA_KEYS = { chat_template_kwargs: 'webgrpo.chat_template_kwargs', tools: 'webgrpo.tools' } as const;

export function trainedChatMetadata(chat: TrainedChat): Record<string, string> {
  const meta: Record<string, string> = { [METADATA_KEYS.chat_template_kwargs]: JSON.stringify(chat.chat_template_kwargs) };
  if (chat.tools !== null) meta[METADATA_KEYS.tools] = JSON.stringify(chat.tools);
  return meta;
}

/** The chat an adapter's metadata records, or null for an adapter from elsewhere (no such keys). */
export function trainedChatFromMetadata(meta: Readonly<Record<string, string>>, where: string): TrainedChat | null {
  const kwargs = meta[METADATA_KEYS.chat_template_kwargs];
  const tools = meta[METADATA_KEYS.tools];
  if (kwargs === undefined && tools === undefined) return null;
  const parse = (key: string, text: string): unknown => {
    try {
      return JSON.parse(text);
    } catch (err) {
      throw new Error(`${where}: metadata ${key} is not valid JSON (${(err as Error).message})`);
    }
  };
  return checkedChat({ chat_template_kwargs: kwargs === undefined ? null : parse(METADATA_KEYS.chat_template_kwargs, kwargs), tools: tools === undefined ? null : parse(METADATA_KEYS.tools, tools) }, `${where}: metadata`);
}

function checkedChat(raw: { chat_template_kwargs: unknown; tools: unknown }, where: string): TrainedChat {
  const kwargs = raw.chat_template_kwargs;
  if (kwargs !== null && (typeof kwargs !== 'object' || Array.isArray(kwargs))) throw new Error(`${where} chat_template_kwargs must be a JSON object or null, got ${JSON.stringify(kwargs)}`);
  const tools = raw.tools;
  if (tools !== null && (!Array.isArray(tools) || !tools.every((t) => typeof t === 'object' && t !== null && typeof (t as ToolSchema).function?.name === 'string'))) {
    throw new Error(`${where} tools must be a list of {"type": "function", "function": {"name": …}} schemas`);
  }
  return { chat_template_kwargs: kwargs as Record<string, unknown> | null, tools: tools as ToolSchema[] | null };
}

/**
 * tokenizer_config.json (the base's text, or none) with the trained chat set: `chat_template_kwargs`
 * always (null when the run set none, so an older value never survives), `tools` when known.
 */
export function withTrainedChat(tokenizerConfig: string | null, chat: TrainedChat): string {
  let config: Record<string, unknown> = {};
  if (tokenizerConfig !== null) {
    try {
      config = JSON.parse(tokenizerConfig) as Record<string, unknown>;
    } catch (err) {
      throw new Error(`the checkpoint's tokenizer_config.json is not valid JSON (${(err as Error).message})`);
    }
  }
  config.chat_template_kwargs = chat.chat_template_kwargs;
  if (chat.tools !== null) config.tools = chat.tools;
  return JSON.stringify(config, null, 2) + '\n';
}
