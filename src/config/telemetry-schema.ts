import { z } from 'zod';
import { headerRecord, httpUrl } from './fragments.js';

/** The `telemetry` section of paddock.yaml: OpenTelemetry traces, off unless an endpoint is set. */
export const telemetrySchema = z
  .object({
    serviceName: z
      .string()
      .min(1)
      .max(200)
      .default('paddock')
      .describe(
        'The `service.name` of the spans (tell several servers apart with `service.instance.id`, which is set per start).',
      ),
    otlp: z
      .object({
        endpoint: httpUrl
          .optional()
          .describe(
            'An OTLP/HTTP collector, e.g. `http://127.0.0.1:4318` (spans go to `/v1/traces`, binary protobuf). Absent: no traces.',
          ),
        headers: headerRecord
          .default({})
          .describe(
            'Headers sent with every export (an API key of a tracing service; keep it out of the file with environment-variable expansion).',
          ),
        includeInputs: z
          .boolean()
          .default(false)
          .describe(
            'Put each call’s input (redacted like the audit log, cut to 4 KiB) on its span as gen_ai.tool.call.arguments. Off: spans carry names, callers and outcomes only.',
          ),
      })
      .strict()
      .default({ headers: {}, includeInputs: false })
      .describe('Export over OTLP/HTTP.'),
  })
  .strict();

export type TelemetryConfig = z.infer<typeof telemetrySchema>;
