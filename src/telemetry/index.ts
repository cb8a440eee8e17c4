/** Traces of calls: the tracer the composition root builds from `telemetry` in paddock.yaml. */
import type { TelemetryConfig } from '../config/telemetry-schema.js';
import type { Logger } from '../shared/logger.js';
import { OtlpTracer } from './otlp-tracer.js';
import { NOOP_TRACER, type Tracer } from './types.js';

const VERSION = '0.1.0';

/** The OTLP tracer when `telemetry.otlp.endpoint` is set, else the no-op one. */
export function createTracer(config: TelemetryConfig, instanceId: string, logger: Logger): Tracer {
  const endpoint = config.otlp.endpoint;
  if (!endpoint) return NOOP_TRACER;
  logger.info('telemetry.enabled', { endpoint, includeInputs: config.otlp.includeInputs });
  return new OtlpTracer({
    endpoint,
    headers: config.otlp.headers,
    includeInputs: config.otlp.includeInputs,
    service: { name: config.serviceName, version: VERSION, instanceId },
    logger,
  });
}
