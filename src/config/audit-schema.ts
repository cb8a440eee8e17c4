import { isAbsolute } from 'node:path';
import { z } from 'zod';

/** Signing of the audit chain's head with a key kept outside the data directory. */
export const auditSigningSchema = z
  .object({
    keyFile: z
      .string()
      .min(1)
      .refine(isAbsolute, 'give an absolute path')
      .describe(
        'An Ed25519 private key (PEM, PKCS#8) outside the data directory — someone who can rewrite the database must not be able to re-sign it. `openssl genpkey -algorithm ed25519 -out key.pem` makes one.',
      ),
    everyMinutes: z
      .number()
      .int()
      .min(1)
      .max(1_440)
      .default(5)
      .describe('How often the head (the last end seq and its link) is signed and published.'),
    file: z
      .string()
      .min(1)
      .refine(isAbsolute, 'give an absolute path')
      .optional()
      .describe(
        'Append each signed head to this file, one JSON line each (keep it outside the data directory too).',
      ),
    notify: z.string().min(1).optional().describe('Also send each signed head to this notify channel.'),
  })
  .strict()
  .refine((s) => s.file !== undefined || s.notify !== undefined, {
    message: 'name where signed heads go: file, notify, or both',
  });

/** The `audit` section of paddock.yaml. */
export const auditConfigSchema = z
  .object({
    signing: auditSigningSchema
      .optional()
      .describe(
        'Sign the head of the audit hash chain every few minutes, so a removed tail (or a rewritten chain) is caught by `paddock audit verify --signed FILE`. Off by default.',
      ),
  })
  .strict();

export type AuditSigningConfig = z.infer<typeof auditSigningSchema>;
