/**
 * Computer profiles: the built-in `shell`, `node` and `python`, plus those of paddock.yaml.
 * Availability is computed from the programs a profile requires.
 */
import {
  type LimitsConfig,
  limitsSchema,
  type ProfileConfig,
  profileSchema,
} from '../config/computer-schema.js';
import { PaddockError } from '../shared/errors.js';
import type { ProfileImageInfo, ProfileImages } from './images/profile-image.js';

/** A profile as list_profiles shows it. */
export interface ProfileInfo {
  [key: string]: unknown;
  id: string;
  name: string;
  description: string;
  available: boolean;
  /** Why the profile cannot launch, when unavailable. */
  unavailableReason: string | null;
  networkMode: 'none' | 'proxy';
  limits: LimitsConfig;
  /** The profile's own system, when it runs on an image (null: the host's directories). */
  image: ProfileImageInfo | null;
}

const BUILT_IN: ProfileConfig[] = [
  {
    id: 'shell',
    name: 'Shell',
    description: 'A Linux shell with bash and the GNU core utilities: files, text processing, scripting.',
    requires: ['bash'],
  },
  {
    id: 'node',
    name: 'Node.js',
    description: 'A Linux shell with Node.js for JavaScript and TypeScript tooling, scripts and web servers.',
    requires: ['bash', 'node'],
  },
  {
    id: 'python',
    name: 'Python',
    description:
      'A Linux shell with Python 3 and its standard library for scripts, data processing and web servers.',
    requires: ['bash', 'python3'],
  },
].map((p) => profileSchema.parse(p));

/** The built-in profiles (fully defaulted). */
export function builtInProfiles(): ProfileConfig[] {
  return BUILT_IN.map((p) => ({ ...p, limits: { ...p.limits } }));
}

/** The profile catalogue of one server. */
export class ProfileCatalog {
  private readonly profiles = new Map<string, ProfileConfig>();

  constructor(
    configured: ProfileConfig[],
    private readonly hasProgram: (name: string) => boolean,
    /** Whether this server runs the egress proxy (profiles with network mode "proxy" need it). */
    private readonly egress = false,
    /** Why profiles naming another backend (`browser`) cannot launch now; null when they can. */
    private readonly backendUnavailable: (backend: string) => string | null = (b) =>
      `this server has no "${b}" backend.`,
    /** The images of profiles that name one. */
    private readonly images: ProfileImages | null = null,
  ) {
    for (const p of builtInProfiles()) this.profiles.set(p.id, p);
    for (const p of configured) this.profiles.set(p.id, { ...p, limits: limitsSchema.parse(p.limits) });
  }

  /** A profile by id; NOT_FOUND names the known ids. */
  get(id: string): ProfileConfig {
    const p = this.profiles.get(id);
    if (!p) {
      throw new PaddockError(
        'NOT_FOUND',
        `No profile "${id.slice(0, 128)}"; call list_profiles and use one of: ${[...this.profiles.keys()].join(', ')}.`,
      );
    }
    return p;
  }

  /** Every profile, in catalogue order. */
  all(): ProfileConfig[] {
    return [...this.profiles.values()];
  }

  /** Whether the profile can launch, with the reason when it cannot. */
  availability(p: ProfileConfig): { available: boolean; reason: string | null } {
    if (p.backend && p.backend !== 'bwrap') {
      const reason = this.backendUnavailable(p.backend);
      return { available: reason === null, reason };
    }
    if (p.image) {
      const reason = this.images ? this.images.unavailable(p) : 'this server has no image store.';
      if (reason) return { available: false, reason: `${reason[0]?.toUpperCase()}${reason.slice(1)}` };
    }
    const has = (name: string) =>
      p.image ? (this.images?.hasProgram(p, name) ?? false) : this.hasProgram(name);
    const missing = p.requires.filter((name) => !has(name));
    if (missing.length > 0) {
      return {
        available: false,
        reason: `Missing program${missing.length > 1 ? 's' : ''}: ${missing.join(', ')}.`,
      };
    }
    if (p.networkMode === 'proxy' && !this.egress) {
      return {
        available: false,
        reason: 'network mode "proxy" needs the egress proxy, which this server does not run; use "none".',
      };
    }
    return { available: true, reason: null };
  }

  /** Profiles matching `search` (case-insensitive, in name or description), in catalogue order. */
  list(search?: string): ProfileInfo[] {
    const needle = search?.trim().toLowerCase() ?? '';
    const out: ProfileInfo[] = [];
    for (const p of this.profiles.values()) {
      if (needle && !`${p.name}\n${p.description}`.toLowerCase().includes(needle)) continue;
      const { available, reason } = this.availability(p);
      out.push({
        id: p.id,
        name: p.name,
        description: p.description,
        available,
        unavailableReason: reason,
        networkMode: p.networkMode,
        limits: p.limits,
        image: this.images?.info(p) ?? null,
      });
    }
    return out;
  }
}
