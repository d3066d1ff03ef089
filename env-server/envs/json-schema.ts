// JSON Schemas shaped like pydantic 2's `model_json_schema()` output, for GET /schema.
// pydantic sorts every object's keys alphabetically except the field order under `properties`
// (and the contents of `default`), so clients that diff schemas see the same documents.

export type JsonSchema = Record<string, unknown>;

export interface SchemaField {
  name: string;
  /** The field's type part, e.g. `{type: 'string', minLength: 1}`. */
  schema: JsonSchema;
  description?: string;
  required?: boolean;
  /** A literal default, shown in the schema (default factories are not shown, as in pydantic). */
  default?: unknown;
}

/** pydantic's generated field title: `echoed_message` -> `Echoed Message`. */
export function fieldTitle(name: string): string {
  return name
    .split('_')
    .map((part) => (part.length > 0 ? part[0]!.toUpperCase() + part.slice(1) : part))
    .join(' ');
}

export function modelSchema(options: {
  title: string;
  description?: string;
  fields: readonly SchemaField[];
  additionalProperties: boolean;
  defs?: Record<string, JsonSchema>;
}): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const field of options.fields) {
    const property: JsonSchema = { ...field.schema, title: fieldTitle(field.name) };
    if (field.description !== undefined) property.description = field.description;
    if ('default' in field) property.default = field.default;
    properties[field.name] = property;
    if (field.required) required.push(field.name);
  }
  const schema: JsonSchema = {
    additionalProperties: options.additionalProperties,
    properties,
    title: options.title,
    type: 'object',
  };
  if (options.description !== undefined) schema.description = options.description;
  if (required.length > 0) schema.required = required;
  if (options.defs !== undefined) schema.$defs = options.defs;
  return sortLikePydantic(schema, null) as JsonSchema;
}

function sortLikePydantic(value: unknown, parentKey: string | null): unknown {
  if (Array.isArray(value)) return value.map((item) => sortLikePydantic(item, null));
  if (value === null || typeof value !== 'object') return value;
  if (parentKey === 'default') return value;
  const entries = Object.entries(value as Record<string, unknown>);
  // Property names keep declaration order; schema keywords are sorted.
  if (parentKey !== 'properties') entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const sorted: Record<string, unknown> = {};
  for (const [key, item] of entries) sorted[key] = sortLikePydantic(item, key);
  return sorted;
}

/** Fields every OpenEnv Observation has before the env's own (`done`, `reward`, `metadata`). */
export const OBSERVATION_BASE_FIELDS: readonly SchemaField[] = [
  {
    name: 'done',
    schema: { type: 'boolean' },
    description: 'Whether the episode has terminated',
    default: false,
  },
  {
    name: 'reward',
    schema: { anyOf: [{ type: 'boolean' }, { type: 'integer' }, { type: 'number' }, { type: 'null' }] },
    description: 'Reward signal from the last action',
    default: null,
  },
  {
    name: 'metadata',
    schema: { type: 'object', additionalProperties: true },
    description: 'Additional metadata for the observation',
  },
];

export function observationSchema(
  title: string,
  description: string,
  fields: readonly SchemaField[],
  defs?: Record<string, JsonSchema>,
): JsonSchema {
  return modelSchema({
    title,
    description,
    fields: [...OBSERVATION_BASE_FIELDS, ...fields],
    additionalProperties: false,
    ...(defs !== undefined ? { defs } : {}),
  });
}

/** The base OpenEnv State schema: /schema always sends this one, never an env's subclass. */
export const BASE_STATE_SCHEMA: JsonSchema = modelSchema({
  title: 'State',
  description: 'Base class for environment state.\n\nRepresents internal environment state, separate from observations.',
  fields: [
    {
      name: 'episode_id',
      schema: { anyOf: [{ type: 'string' }, { type: 'null' }] },
      description: 'Unique identifier for the current episode',
      default: null,
    },
    {
      name: 'step_count',
      schema: { type: 'integer', minimum: 0 },
      description: 'Number of steps taken in the current episode',
      default: 0,
    },
  ],
  additionalProperties: true,
});
