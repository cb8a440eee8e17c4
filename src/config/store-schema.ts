import { z } from 'zod';
import { STORE_PASSWORD_ENV } from './store-env.js';

export { STORE_PASSWORD_ENV };

/** Schemes `store.url` accepts. */
const SCHEMES = ['sqlite:', 'postgres:', 'postgresql:'];

/** The `store` section of paddock.yaml: where audit, memories, runs and the rest live. */
export const storeSchema = z
  .object({
    url: z
      .string()
      .min(1)
      .superRefine((value, ctx) => {
        let url: URL;
        try {
          url = new URL(value);
        } catch {
          ctx.addIssue({
            code: 'custom',
            message: `"${value.slice(0, 80)}" is not a URL; write sqlite: (the embedded database) or postgres://user@host:5432/paddock`,
          });
          return;
        }
        if (!SCHEMES.includes(url.protocol)) {
          ctx.addIssue({
            code: 'custom',
            message: `unknown store scheme "${url.protocol}"; use sqlite: or postgres://`,
          });
        }
        if (url.password !== '') {
          ctx.addIssue({
            code: 'custom',
            message: `holds a password; never write it in the config file. Remove it from the URL and set ${STORE_PASSWORD_ENV} in the server's environment, or name a file holding it with store.passwordFile`,
          });
        }
      })
      .optional()
      .describe(
        'Where the stores live: absent or `sqlite:` for the embedded SQLite database in the data directory (`sqlite:/path/to/file.db` for another file), `postgres://user@host:5432/db` for a PostgreSQL database several servers share. Never a password in it.',
      ),
    passwordFile: z
      .string()
      .min(1)
      .optional()
      .describe(
        `File (mode 0600) whose first line is the database password; without it, ${STORE_PASSWORD_ENV} from the environment is used.`,
      ),
  })
  .strict();

export type StoreConfig = z.infer<typeof storeSchema>;
