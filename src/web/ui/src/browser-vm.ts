/**
 * The page as the host of a browser computer: when the server says `vm.boot`, the x86 emulator
 * (v86, loaded only then) boots the server's image in this tab, and the guest's serial ports are
 * relayed over the dock socket (`vm.serial`). The server speaks the guest protocol; this page
 * only carries bytes. Closing or reloading the tab ends the computer; so does losing the socket.
 */
import type { ServerMessage } from '../../dock/protocol.js';
import type { DockSocket } from './socket.js';

type VmMessage = Extract<ServerMessage, { type: 'vm.boot' | 'vm.serial' | 'vm.stop' }>;

/** Raw bytes in one `vm.serial` message (its base64 stays under the server's bound). */
const MAX_CHUNK_BYTES = 48 * 1024;

interface Emulator {
  add_listener(event: string, listener: (byte: number) => void): void;
  add_listener(event: 'emulator-loaded', listener: () => void): void;
  serial_send_bytes(port: number, data: Uint8Array): void;
  destroy(): Promise<void> | void;
}

interface Running {
  emulator: Emulator | null;
  /** Bytes for the guest that came before the machine was loaded (a restore would lose them). */
  early: Array<{ port: 1 | 2; data: Uint8Array }> | null;
  out: Record<1 | 2, number[]>;
  flushing: boolean;
  stopped: boolean;
}

function toBase64(bytes: number[]): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 8192) s += String.fromCharCode(...bytes.slice(i, i + 8192));
  return btoa(s);
}

function fromBase64(b64: string): Uint8Array {
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}

/** Hosts the browser computers the server asks this page to boot. */
export class BrowserVmHost {
  private readonly vms = new Map<string, Running>();
  /** Generations of the computers this tab runs, by vm. */
  private readonly generations = new Map<string, number>();
  /** Told when the computers this tab runs change (their generations). */
  onHosting: (generations: number[]) => void = () => undefined;

  constructor(private readonly socket: DockSocket) {}

  private hostingChanged(): void {
    this.onHosting([...this.generations.values()]);
  }

  /** Offers this page as a host (after every (re)connection). */
  offer(): void {
    if (typeof WebAssembly === 'object') this.socket.send({ type: 'vm.host' });
  }

  /** The socket dropped: the server has ended this page's computers, so they stop here too. */
  disconnected(): void {
    for (const id of [...this.vms.keys()]) this.stop(id);
  }

  handle(msg: VmMessage): void {
    if (msg.type === 'vm.boot') {
      if (msg.generation !== undefined) this.generations.set(msg.vm, msg.generation);
      this.hostingChanged();
      void this.boot(msg);
    } else if (msg.type === 'vm.serial') {
      const vm = this.vms.get(msg.vm);
      const data = fromBase64(msg.data);
      if (vm?.early) vm.early.push({ port: msg.port, data });
      else vm?.emulator?.serial_send_bytes(msg.port, data);
    } else this.stop(msg.vm);
  }

  private async boot(msg: Extract<VmMessage, { type: 'vm.boot' }>): Promise<void> {
    const vm: Running = { emulator: null, early: [], out: { 1: [], 2: [] }, flushing: false, stopped: false };
    this.vms.set(msg.vm, vm);
    const { V86 } = await import('v86');
    if (vm.stopped) return;
    // a snapshot of the booted machine restores in about a second; a cold boot takes many
    const booted = msg.state ? { initial_state: { url: msg.state } } : {};
    const emulator = new V86({
      ...msg.emulator,
      ...booted,
      wasm_path: msg.wasm,
      memory_size: msg.memoryMb * 1024 * 1024,
      bios: { url: msg.files.bios },
      vga_bios: { url: msg.files.vgaBios },
      bzimage: { url: msg.files.bzimage },
      initrd: { url: msg.files.initrd },
      cmdline: msg.cmdline,
      autostart: true,
    }) as unknown as Emulator;
    vm.emulator = emulator;
    emulator.add_listener('emulator-loaded', () => {
      const early = vm.early ?? [];
      vm.early = null;
      for (const { port, data } of early) emulator.serial_send_bytes(port, data);
    });
    for (const port of [1, 2] as const) {
      emulator.add_listener(`serial${port}-output-byte`, (byte) => {
        vm.out[port].push(byte);
        if (!vm.flushing) {
          vm.flushing = true;
          setTimeout(() => this.flush(msg.vm, vm), 0);
        }
      });
    }
  }

  private flush(id: string, vm: Running): void {
    vm.flushing = false;
    if (vm.stopped) return;
    for (const port of [1, 2] as const) {
      const bytes = vm.out[port];
      for (let at = 0; at < bytes.length; at += MAX_CHUNK_BYTES) {
        this.socket.send({
          type: 'vm.serial',
          vm: id,
          port,
          data: toBase64(bytes.slice(at, at + MAX_CHUNK_BYTES)),
        });
      }
      vm.out[port] = [];
    }
  }

  private stop(id: string): void {
    if (this.generations.delete(id)) this.hostingChanged();
    const vm = this.vms.get(id);
    if (!vm) return;
    this.vms.delete(id);
    vm.stopped = true;
    void vm.emulator?.destroy();
  }
}
