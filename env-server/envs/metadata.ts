import type { EnvMetadata } from './types.ts';

/** OpenEnv's default metadata for an environment class (GET /metadata). */
export function defaultMetadata(className: string): EnvMetadata {
  return {
    name: className,
    description: `${className} environment`,
    readme_content: null,
    version: '1.0.0',
    author: null,
    documentation_url: null,
  };
}
