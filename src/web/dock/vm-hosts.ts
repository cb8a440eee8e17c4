/**
 * Dock pages as hosts of browser computers. A signed-in page that has the emulator offers itself
 * (`vm.host`); a launch of a browser profile picks one page that hosts nothing yet (the one that
 * asked for the launch when it can) and tells it to boot (`vm.boot`). From then on the guest's
 * serial bytes travel as `vm.serial` messages in both directions. A page speaks only for the VM
 * the server gave it: bytes for any other id are refused. When the page's socket closes, the
 * computer's link is gone.
 */
import { randomBytes } from 'node:crypto';
import type { BrowserVmLink } from '../../computer/backend/browser/agent-line.js';
import type { BrowserHosts } from '../../computer/backend/browser/backend.js';
import { PAGE_GONE } from '../../computer/backend/browser/backend.js';
import { type BrowserVmSettings, STATE_FILE } from '../../computer/backend/browser/image.js';
import { PaddockError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { DockConnection } from './actions.js';
import type { ServerMessage } from './protocol.js';

/** Where the page fetches the emulator and the image (served by the dock's routes). */
export const VM_ASSET_PATH = '/dock/vm/';

interface HostedVm {
  id: string;
  conn: DockConnection;
  listeners: Set<(port: 1 | 2, data: Buffer) => void>;
  gone(reason: string): void;
}

/** The hosts of browser computers among the connected dock pages. */
export class DockVmHosts implements BrowserHosts {
  /** Pages that offered to host, oldest first. */
  private readonly offers = new Set<DockConnection>();
  private readonly vms = new Map<string, HostedVm>();
  private preferred: DockConnection | null = null;

  constructor(private readonly logger: Logger) {}

  /** A page that can host. */
  offer(conn: DockConnection): void {
    this.offers.delete(conn);
    this.offers.add(conn);
  }

  /** The page whose launch comes next: it hosts the computer when it can. */
  prefer(conn: DockConnection): void {
    this.preferred = conn;
  }

  /** A page went away: its VM's computer ends. */
  drop(conn: DockConnection): void {
    this.offers.delete(conn);
    if (this.preferred === conn) this.preferred = null;
    for (const vm of this.vms.values()) if (vm.conn === conn) vm.gone(PAGE_GONE);
  }

  /** Serial bytes from a page; only for the VM it hosts. */
  fromPage(conn: DockConnection, vmId: string, port: 1 | 2, data: string): void {
    const vm = this.vms.get(vmId);
    if (!vm || vm.conn !== conn) {
      this.logger.warn('dock.vm_forged', { vm: vmId });
      throw new PaddockError('INVALID_ARGUMENT', `This page hosts no computer ${vmId}; reload the page.`);
    }
    const bytes = Buffer.from(data, 'base64');
    for (const l of vm.listeners) l(port, bytes);
  }

  unavailable(): string | null {
    if (this.free().length > 0) return null;
    return this.offers.size > 0
      ? 'every signed-in dock page already hosts a browser computer; open the dock in another tab to host one more.'
      : 'no signed-in dock page is open to host a browser computer; open the dock (`paddock open`) and launch the profile again.';
  }

  claim(settings: BrowserVmSettings): BrowserVmLink {
    const free = this.free();
    const conn = this.preferred && free.includes(this.preferred) ? this.preferred : free.at(-1);
    if (!conn) throw new PaddockError('NOT_RUNNING', `A browser computer cannot boot: ${this.unavailable()}`);
    const id = `vm-${randomBytes(8).toString('hex')}`;
    let goneResolve!: (reason: string) => void;
    const gone = new Promise<string>((resolve) => {
      goneResolve = resolve;
    });
    const vm: HostedVm = {
      id,
      conn,
      listeners: new Set(),
      gone: (reason) => {
        if (this.vms.get(id) !== vm) return;
        this.vms.delete(id);
        goneResolve(reason);
      },
    };
    this.vms.set(id, vm);
    const send = (message: ServerMessage) => {
      if (conn.ws.readyState === conn.ws.OPEN) conn.ws.send(JSON.stringify(message));
    };
    const file = (name: string) => `${VM_ASSET_PATH}image/${name}`;
    send({
      type: 'vm.boot',
      vm: id,
      memoryMb: settings.memoryMb,
      cmdline: settings.cmdline,
      emulator: settings.emulator,
      wasm: `${VM_ASSET_PATH}v86.wasm`,
      files: {
        bios: file('bios.bin'),
        vgaBios: file('vgabios.bin'),
        bzimage: file('bzImage'),
        initrd: file('initrd.img'),
      },
      ...(settings.restore ? { state: file(STATE_FILE) } : {}),
      ...(settings.generation !== undefined ? { generation: settings.generation } : {}),
    });
    this.logger.info('dock.vm_boot', { vm: id, restore: settings.restore === true });
    return {
      send: (port, data) => {
        if (this.vms.get(id) === vm && data.length > 0)
          send({ type: 'vm.serial', vm: id, port, data: data.toString('base64') });
      },
      onData: (listener) => {
        vm.listeners.add(listener);
        return { dispose: () => vm.listeners.delete(listener) };
      },
      gone,
      close: (reason) => {
        if (this.vms.get(id) !== vm) return;
        send({ type: 'vm.stop', vm: id });
        vm.gone(reason ?? 'the computer was stopped');
      },
    };
  }

  private free(): DockConnection[] {
    const busy = new Set([...this.vms.values()].map((v) => v.conn));
    return [...this.offers].filter((c) => !busy.has(c));
  }
}
