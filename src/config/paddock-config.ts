import type { z } from 'zod';
import { notifySchema } from './notify-schema.js';
import { buildConfigSchema } from './schema.js';

/** The schema of paddock.yaml, composed from each module's section. */
export const paddockConfigSchema = buildConfigSchema({
  notify: notifySchema.default({ channels: {} }),
});

export type PaddockConfig = z.infer<typeof paddockConfigSchema>;
