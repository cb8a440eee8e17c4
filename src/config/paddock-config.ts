import type { z } from 'zod';
import { agentsConfigSchema } from './agents-schema.js';
import { auditConfigSchema } from './audit-schema.js';
import { computerSchema } from './computer-schema.js';
import { notifySchema } from './notify-schema.js';
import { buildConfigSchema } from './schema.js';
import { telemetrySchema } from './telemetry-schema.js';

/** The schema of paddock.yaml, composed from each module's section. */
export const paddockConfigSchema = buildConfigSchema({
  notify: notifySchema.default({ channels: {} }),
  audit: auditConfigSchema.default({}).describe('The audit log: signing of its hash chain.'),
  telemetry: telemetrySchema
    .default(telemetrySchema.parse({}))
    .describe('OpenTelemetry traces of every call (off unless telemetry.otlp.endpoint is set).'),
  agents: agentsConfigSchema
    .default(agentsConfigSchema.parse({}))
    .describe('Agents: providers and scheduling.'),
  computer: computerSchema
    .default(computerSchema.parse({}))
    .describe('The computer: profiles, limits, retention.'),
});

export type PaddockConfig = z.infer<typeof paddockConfigSchema>;
