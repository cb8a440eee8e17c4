/**
 * Who a client_id names: a client registered here (dynamic registration), or an https URL
 * whose client ID metadata document is fetched and checked (it must name itself as that
 * client_id). The fetch goes only to public addresses (checked on the address connected, so
 * a DNS answer cannot point it into the private network), without redirects, bounded in time
 * and size.
 */
import { lookup as dnsLookup } from 'node:dns';
import { request } from 'node:https';
import type { LookupFunction } from 'node:net';
import { inspectAddress } from '../../policy/ip.js';
import type { OAuthClient, OAuthStore } from '../../store/oauth.js';
import { acceptableRedirectUri } from './protocol.js';

/** A client as the consent page shows it. */
export interface ResolvedClient {
  client: OAuthClient;
  /** The metadata document was fetched and names this client_id. */
  verified: boolean;
}

export type ClientResolution = { ok: true; client: ResolvedClient } | { ok: false; reason: string };

/** Fetches a metadata document; resolves to its parsed JSON or throws with a reason. */
export type MetadataFetcher = (url: URL) => Promise<unknown>;

const MAX_DOCUMENT_BYTES = 65_536;
const FETCH_TIMEOUT_MS = 5_000;

/** Refuses to connect to anything but public unicast addresses. */
const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: false }, (err, address, family) => {
    if (err) return callback(err, '', 0);
    const info = inspectAddress(String(address));
    if (!info || info.forbidden) {
      return callback(
        new Error(`${hostname} resolves to ${String(address)} (${info?.kind ?? 'unknown'})`),
        '',
        0,
      );
    }
    callback(null, String(address), family as number);
  });
};

/** The default fetcher: https GET to a public address, no redirects, 5 s, 64 KiB. */
export const fetchPublicMetadata: MetadataFetcher = (url) =>
  new Promise((resolve, reject) => {
    // an IP literal is connected to without a lookup: check it here
    const literal = inspectAddress(url.hostname.replace(/^\[|\]$/g, ''));
    if (literal?.forbidden) {
      return reject(new Error(`${url.hostname} resolves to ${literal.address} (${literal.kind})`));
    }
    const req = request(
      url,
      {
        method: 'GET',
        headers: { accept: 'application/json' },
        lookup: publicOnlyLookup,
        timeout: FETCH_TIMEOUT_MS,
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return reject(new Error(`the document answered HTTP ${res.statusCode}`));
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_DOCUMENT_BYTES)
            req.destroy(new Error(`the document is over ${MAX_DOCUMENT_BYTES} bytes`));
          else chunks.push(c);
        });
        res.on('end', () => {
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
          } catch {
            reject(new Error('the document is not JSON'));
          }
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('the document did not answer in time')));
    req.on('error', reject);
    req.end();
  });

/** Resolves client_ids for the authorization endpoint. */
export class ClientResolver {
  constructor(
    private readonly store: OAuthStore,
    private readonly fetchMetadata: MetadataFetcher = fetchPublicMetadata,
  ) {}

  async resolve(clientId: string): Promise<ClientResolution> {
    if (!clientId) return { ok: false, reason: 'client_id is missing.' };
    if (!clientId.startsWith('https://')) {
      const client = await this.store.clientByClientId(clientId);
      if (!client || client.metadataUrl) {
        return { ok: false, reason: 'client_id is not registered here; register the client first.' };
      }
      return { ok: true, client: { client, verified: false } };
    }
    let url: URL;
    try {
      url = new URL(clientId);
    } catch {
      return { ok: false, reason: 'client_id is not a valid URL.' };
    }
    if (url.pathname === '/' || url.hash || url.username || url.password) {
      return {
        ok: false,
        reason: 'A metadata document client_id must be an https URL with a path and no fragment.',
      };
    }
    let doc: unknown;
    try {
      doc = await this.fetchMetadata(url);
    } catch (e) {
      return {
        ok: false,
        reason: `The client metadata document could not be fetched: ${(e as Error).message}.`,
      };
    }
    const d = (doc ?? {}) as Record<string, unknown>;
    if (d.client_id !== clientId) {
      return { ok: false, reason: 'The metadata document does not name this URL as its client_id.' };
    }
    const uris = d.redirect_uris;
    if (
      !Array.isArray(uris) ||
      uris.length === 0 ||
      uris.length > 10 ||
      !uris.every((u) => typeof u === 'string' && acceptableRedirectUri(u))
    ) {
      return { ok: false, reason: 'The metadata document must list acceptable redirect_uris.' };
    }
    const name = (typeof d.client_name === 'string' && d.client_name.trim().slice(0, 100)) || url.host;
    const client = await this.store.saveClient({
      name,
      redirectUris: uris as string[],
      metadataUrl: clientId,
    });
    return { ok: true, client: { client, verified: true } };
  }
}
