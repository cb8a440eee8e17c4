/**
 * `paddock images list | build PROFILE | import FILE | pull REF | rm NAME | prune`: the image
 * store of the data directory, which profiles with an `image` boot from. It works on the store
 * directly (a running server sees new images at its next launch); building, importing and
 * pulling print their progress on stderr.
 */

import { archiveImageName, importArchive } from '../computer/images/archive.js';
import { ImageStore, imageIdsOf, imagesDirOf } from '../computer/images/index.js';
import { buildProfileImage, profileImageName } from '../computer/images/profile-image.js';
import { pullImage, refImageName } from '../computer/images/registry.js';
import { mib } from '../computer/images/store.js';
import { builtInProfiles } from '../computer/profiles.js';
import { loadConfig } from '../config/load.js';
import { PaddockError } from '../shared/errors.js';
import { out, parseCommandArgs, UsageError } from './args.js';

const HELP = `Usage: paddock images <command>

  list [--json]              the images in the store: name, where it came from, its system, size,
                             and the profiles that boot from it
  build PROFILE              build the image a profile names: mmdebstrap for { debian }, import
                             for { oci: { archive } }, pull for { oci: { ref } } (one-time cost)
  import FILE [--name NAME]  import an image archive (docker save, podman save,
                             skopeo copy … oci-archive:FILE); layers checked by digest
  pull REF [--name NAME]     pull REGISTRY/NAME:TAG from an OCI registry (credentials from the
                             Docker config file, as docker login writes it)
  rm NAME                    remove an image no running computer uses (its layers go with prune)
  prune                      remove the layers no image uses

Profiles name their image in paddock.yaml (computer.profiles[].image); see docs/images.md.`;

const OPTIONS = {
  config: { type: 'string' as const },
  json: { type: 'boolean' as const },
  name: { type: 'string' as const },
  help: { type: 'boolean' as const, short: 'h' },
};

const progress = (line: string) => process.stderr.write(`${line}\n`);

export async function imagesCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('images', args, OPTIONS);
  const [sub, arg] = positionals;
  if (values.help || !sub) {
    out(HELP);
    return values.help ? 0 : 64;
  }
  const loaded = loadConfig(typeof values.config === 'string' ? { configPath: values.config } : {});
  const computer = loaded.config.computer;
  if (process.getuid?.() !== 0)
    throw new PaddockError(
      'UNSUPPORTED_CAPABILITY',
      'Images need Paddock to run as root (their files belong to the image id range); run this command as root.',
    );
  const store = new ImageStore(imagesDirOf(computer, loaded.dataDir), imageIdsOf(computer)).open();
  const profiles = [...builtInProfiles(), ...computer.profiles];
  const name = typeof values.name === 'string' ? values.name : undefined;
  switch (sub) {
    case 'list': {
      const usedBy = (image: string) =>
        profiles
          .filter((p) => p.image && profileImageName(p.image, loaded.projectDir) === image)
          .map((p) => p.id);
      const rows = store.list().map((r) => ({ ...r, profiles: usedBy(r.name), inUse: store.inUse(r.name) }));
      const missing = profiles
        .filter((p) => p.image && !store.get(profileImageName(p.image, loaded.projectDir)))
        .map((p) => ({
          profile: p.id,
          image: profileImageName(p.image!, loaded.projectDir),
          build: `paddock images build ${p.id}`,
        }));
      if (values.json) {
        out(JSON.stringify({ dir: store.dir, diskBytes: store.diskBytes(), images: rows, unbuilt: missing }));
        return 0;
      }
      if (rows.length === 0) out('No images.');
      else {
        out(
          `${'NAME'.padEnd(32)} ${'SOURCE'.padEnd(9)} ${'SIZE'.padEnd(10)} ${'SYSTEM'.padEnd(32)} PROFILES`,
        );
        for (const r of rows)
          out(
            `${r.name.padEnd(32)} ${r.origin.kind.padEnd(9)} ${mib(r.sizeBytes).padEnd(10)} ${(r.os ?? '-').slice(0, 32).padEnd(32)} ${r.profiles.join(',') || '-'}${r.inUse ? ' (in use)' : ''}`,
          );
      }
      for (const m of missing)
        out(`Profile ${m.profile}: its image ${m.image} is not built; run "${m.build}".`);
      out(`Store: ${store.dir} (${mib(store.diskBytes())} on disk)`);
      return 0;
    }
    case 'build': {
      if (!arg) throw new UsageError('Name the profile: paddock images build PROFILE.');
      const profile = profiles.find((p) => p.id === arg);
      if (!profile)
        throw new PaddockError(
          'NOT_FOUND',
          `No profile "${arg}"; the profiles are ${profiles.map((p) => p.id).join(', ')}.`,
        );
      const started = Date.now();
      const record = await buildProfileImage(store, profile, loaded.projectDir, progress);
      out(
        `Built ${record.name} for ${profile.id} in ${Math.round((Date.now() - started) / 1000)} s (${mib(record.sizeBytes)}).`,
      );
      return 0;
    }
    case 'import': {
      if (!arg) throw new UsageError('Give the archive: paddock images import FILE [--name NAME].');
      const record = await importArchive(store, arg, name ?? archiveImageName(arg), progress);
      out(`Imported ${record.name} (${record.layers.length} layers, ${mib(record.sizeBytes)}).`);
      return 0;
    }
    case 'pull': {
      if (!arg)
        throw new UsageError('Give the reference: paddock images pull REGISTRY/NAME:TAG [--name NAME].');
      const record = await pullImage(store, arg, name ?? refImageName(arg), progress);
      out(`Pulled ${record.name} (${record.layers.length} layers, ${mib(record.sizeBytes)}).`);
      return 0;
    }
    case 'rm': {
      if (!arg) throw new UsageError('Name the image: paddock images rm NAME.');
      store.remove(arg);
      out(`Removed ${arg}; run "paddock images prune" to free the layers no image uses.`);
      return 0;
    }
    case 'prune': {
      const { layers, bytes } = store.prune();
      out(`Removed ${layers} unused layer${layers === 1 ? '' : 's'} (${mib(bytes)}).`);
      return 0;
    }
    default:
      out(HELP);
      return 64;
  }
}
