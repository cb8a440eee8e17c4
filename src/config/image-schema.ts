/**
 * Where a profile's root file system comes from: a Debian suite built with mmdebstrap, an OCI
 * archive or registry reference, or an image already in the store by name.
 */
import { z } from 'zod';

/** A Debian package name, optionally with an architecture or version (`name`, `name:arch`, `name=1.2`). */
const debianPackage = z
  .string()
  .regex(/^[a-z0-9][a-z0-9+.-]+(?::[a-z0-9-]+)?(?:=[A-Za-z0-9.+~:-]+)?$/, 'a Debian package name');

/** Where a profile's root file system comes from (absent: the host's own directories, read-only). */
export const imageSchema = z.union([
  z
    .object({
      debian: z
        .object({
          suite: z
            .string()
            .regex(/^[a-z][a-z0-9-]{1,31}$/, 'a Debian suite or codename (e.g. bookworm)')
            .describe('The Debian suite or codename to build from (e.g. bookworm, trixie, stable).'),
          packages: z
            .array(debianPackage)
            .max(1000)
            .default([])
            .describe("Packages installed into the image besides the variant's own."),
          mirror: z
            .url({ protocol: /^https?$/ })
            .optional()
            .describe("The Debian mirror to build from (default: mmdebstrap's)."),
          variant: z
            .enum(['apt', 'minbase', 'essential', 'important', 'standard'])
            .default('apt')
            .describe('mmdebstrap variant: "apt" (default) is the essential packages and apt.'),
        })
        .strict()
        .describe('An image built from Debian packages with mmdebstrap (paddock images build PROFILE).'),
    })
    .strict(),
  z
    .object({
      oci: z.union([
        z
          .object({
            archive: z
              .string()
              .min(1)
              .describe(
                'An image archive (docker save, podman save, skopeo copy … oci-archive:); relative to paddock.yaml.',
              ),
          })
          .strict(),
        z
          .object({
            ref: z
              .string()
              .min(1)
              .max(512)
              .describe(
                'An image in an OCI registry, REGISTRY/NAME:TAG (credentials from the Docker config file).',
              ),
          })
          .strict(),
      ]),
    })
    .strict(),
  z
    .object({
      name: z
        .string()
        .regex(/^[a-z0-9][a-z0-9._-]{0,127}$/, 'an image name as paddock images list shows it')
        .describe('An image already in the store (paddock images import FILE --name NAME).'),
    })
    .strict(),
]);

/** A profile's image as parsed. */
export type ImageConfig = z.output<typeof imageSchema>;
