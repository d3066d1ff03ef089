// The worker the setup page loads a user's environment class in (env-class-preview.ts): one per
// preview, ended by the page once it answered or took too long, so the user's code never runs in the
// page or in the trainer worker before a run starts.
import * as Comlink from 'comlink';
import { previewEnvClass } from './env-class-preview.ts';

Comlink.expose({ previewEnvClass });
