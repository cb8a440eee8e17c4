/** The running guest as a generation's jobs need it: its link, its sandbox and its hello. */
import type { Hello } from '../../guest/protocol.js';
import type { SandboxInstance } from '../backend/types.js';
import type { GuestClient } from '../link/guest-client.js';

/** The running guest, as the table needs it. */
export interface JobGuest {
  client: GuestClient;
  instance: SandboxInstance;
  hello: Hello;
}
