/** Wires the signer of the audit chain's head (`audit.signing`) for `paddock serve`. */
import { appendSignedHead, HeadSigner, loadHeadKey } from '../audit/signing.js';
import { ConfigError } from '../config/config-error.js';
import { isPaddockError } from '../shared/errors.js';
import type { Paddock } from './paddock.js';

/** Starts signing when paddock.yaml asks for it; a bad key or channel is a config error. */
export function startHeadSigner(paddock: Paddock): HeadSigner | undefined {
  const { loaded, logger } = paddock;
  const signing = loaded.config.audit.signing;
  if (!signing) return undefined;
  const file = loaded.file ?? '(defaults)';
  let key: ReturnType<typeof loadHeadKey>;
  try {
    key = loadHeadKey(signing.keyFile, loaded.dataDir);
  } catch (e) {
    if (isPaddockError(e)) throw new ConfigError(file, [`audit.signing.keyFile: ${e.message}`]);
    throw e;
  }
  if (signing.notify && !paddock.notifier.channelNames().includes(signing.notify)) {
    throw new ConfigError(file, [
      `audit.signing.notify: there is no notify channel "${signing.notify}"; add it under notify.channels or remove the line`,
    ]);
  }
  const signer = new HeadSigner({
    audit: paddock.audit,
    key,
    everyMs: signing.everyMinutes * 60_000,
    logger: logger.child({ domain: 'audit' }),
    publish: async (record) => {
      if (signing.file) appendSignedHead(signing.file, record);
      if (signing.notify) {
        await paddock.notifier.send(
          signing.notify,
          {
            title: 'Paddock audit head',
            message: `Audit chain head: end seq ${record.endSeq}, link ${record.hash}.`,
            data: { ...record },
          },
          { policy: paddock.policy, logger },
        );
      }
    },
  });
  signer.start();
  return signer;
}
