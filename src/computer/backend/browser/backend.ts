/**
 * The `browser` backend: a computer that boots in the dock tab that hosts it. The server never runs
 * the guest; it asks a signed-in dock page (through BrowserHosts, implemented by the dock) to boot
 * the image in its x86 emulator and relays the guest's serial ports. The computer lives exactly as
 * long as its page: when the page closes or reloads, the sandbox has exited.
 */
import { PaddockError } from '../../../shared/errors.js';
import type { ComputerBackend, SandboxInstance, SandboxSpec } from '../types.js';
import type { BrowserVmLink } from './agent-line.js';
import { BrowserGuest } from './guest.js';
import { type BrowserImage, type BrowserVmSettings, vmMachine } from './image.js';

/** The pages that can host a browser computer (the dock's signed-in pages). */
export interface BrowserHosts {
  /** Why no page can host one now, or null when one can. */
  unavailable(): string | null;
  /** Has a page boot a VM and returns its serial link; throws NOT_RUNNING when no page can. */
  claim(settings: BrowserVmSettings): BrowserVmLink;
}

/** What the page answers when it goes away, as callers see it. */
export const PAGE_GONE =
  'the dock page that hosted this browser computer went away (closed or reloaded); a browser computer lives only as long as its page';

/** How long the preview's probe waits for a server in the emulated machine to answer. */
const PREVIEW_ANSWER_MS = 20_000;

/** Launches browser computers through the dock pages. */
export class BrowserBackend implements ComputerBackend {
  readonly name = 'browser';

  constructor(
    private readonly hosts: BrowserHosts,
    private readonly image: BrowserImage,
    private readonly settings: BrowserVmSettings = vmMachine(),
  ) {}

  /** Why browser profiles cannot launch now (no image, or no page to host), or null. */
  unavailableReason(): string | null {
    const image = this.image.check();
    if (!image.ok) return image.reason;
    const host = this.hosts.unavailable();
    return host ? `${host}` : null;
  }

  async launch(spec: SandboxSpec): Promise<SandboxInstance> {
    const why = this.unavailableReason();
    if (why) throw new PaddockError('NOT_RUNNING', `A browser computer cannot boot: ${why}`);
    const image = this.image.check();
    const restore = image.ok && image.state?.memoryMb === this.settings.memoryMb;
    const link = this.hosts.claim({ ...this.settings, restore, generation: spec.generation });
    const guest = new BrowserGuest(link, spec.probe, restore);
    let destroyed = false;
    const exited = link.gone.then((reason) => {
      guest.close(reason);
      return { exitCode: null, signal: null };
    });
    return {
      fromGuest: guest.fromGuest,
      toGuest: guest.toGuest,
      diagnostics: guest.diagnostics,
      exited,
      familyMechanism: 'session',
      jobRlimits: {},
      enforcement: {
        processes: 'the guest kernel of the page (no limit set)',
        memory: `the emulated machine: ${this.settings.memoryMb} MiB`,
        disk: 'tmpfs in the guest memory',
        network: 'none: the emulated machine has no network device',
      },
      // an emulated machine relays a probe through a few busybox processes: give it time
      previewAnswerMs: PREVIEW_ANSWER_MS,
      hostPid: 0,
      hostWorkspace: null,
      adoptJob: async () => null,
      destroy: async () => {
        if (destroyed) return;
        destroyed = true;
        link.close();
        guest.close('the computer was stopped');
      },
    };
  }

  hasProgram(): boolean {
    return false;
  }

  async dispose(): Promise<void> {}
}

/**
 * The server's backend with the browser backend beside it: a spec whose profile names `browser`
 * launches in a page, every other one on `base`.
 */
export function withBrowserBackend(base: ComputerBackend, browser: BrowserBackend): ComputerBackend {
  return {
    get name() {
      return base.name;
    },
    launch: (spec) => (spec.backend === 'browser' ? browser.launch(spec) : base.launch(spec)),
    hasProgram: (name) => base.hasProgram(name),
    unavailable: (backend) =>
      backend === 'browser' ? browser.unavailableReason() : `this server has no "${backend}" backend.`,
    dispose: () => base.dispose(),
  };
}
