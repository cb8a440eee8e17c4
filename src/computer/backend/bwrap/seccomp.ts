/**
 * A seccomp filter for the computer (classic BPF, given to bwrap with `--seccomp FD`). Every
 * process of a computer runs as one account, so without it a process could reach another's
 * descriptors and memory (ptrace, pidfd_getfd, process_vm_*): take over a running command's
 * tool channel or talk to the guest agent's own link. Those calls, and a few kernel interfaces
 * that only serve exploits in a sandbox, answer EPERM. Other architectures' system calls
 * (i386 and x32 on x86_64) answer EPERM too, so the list cannot be bypassed through them.
 *
 * New user namespaces are refused too (`clone`/`unshare` with CLONE_NEWUSER answer EPERM;
 * `clone3`, whose flags a filter cannot read, answers ENOSYS so libc falls back to `clone`):
 * where the guest agent runs under an id of its own, bwrap cannot also disable them.
 */

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JGE_K = 0x35;
const BPF_JSET_K = 0x45;
const BPF_RET_K = 0x06;
const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
/** The low 32 bits of the first argument (little-endian), where clone and unshare take their flags. */
const OFFSET_ARG0_LOW = 16;
const CLONE_NEWUSER = 0x10000000;
const X32_SYSCALL_BIT = 0x40000000;

interface ArchTable {
  audit: number;
  x32Bit: boolean;
  denied: Record<string, number>;
  /** System calls whose first argument is namespace flags (clone, unshare). */
  namespaceFlags: Record<string, number>;
  clone3: number;
}

const TABLES: Record<string, ArchTable> = {
  x64: {
    audit: 0xc000003e,
    x32Bit: true,
    denied: {
      ptrace: 101,
      process_vm_readv: 310,
      process_vm_writev: 311,
      kcmp: 312,
      pidfd_getfd: 438,
      userfaultfd: 323,
      perf_event_open: 298,
      bpf: 321,
      add_key: 248,
      request_key: 249,
      keyctl: 250,
    },
    namespaceFlags: { clone: 56, unshare: 272 },
    clone3: 435,
  },
  arm64: {
    audit: 0xc00000b7,
    x32Bit: false,
    denied: {
      ptrace: 117,
      process_vm_readv: 270,
      process_vm_writev: 271,
      kcmp: 272,
      pidfd_getfd: 438,
      userfaultfd: 282,
      perf_event_open: 241,
      bpf: 280,
      add_key: 217,
      request_key: 218,
      keyctl: 219,
    },
    namespaceFlags: { clone: 220, unshare: 97 },
    clone3: 435,
  },
};

/** The system calls the filter refuses on this host's architecture (for docs and tests). */
export function deniedSyscalls(arch: string = process.arch): string[] {
  return Object.keys(TABLES[arch]?.denied ?? {});
}

/** The compiled filter for this host's architecture, or null where none is defined. */
export function seccompFilter(arch: string = process.arch): Buffer | null {
  const table = TABLES[arch];
  if (!table) return null;
  type Insn = [code: number, jt: number, jf: number, k: number];
  const insns: Insn[] = [
    [BPF_LD_W_ABS, 0, 0, OFFSET_ARCH],
    [BPF_JEQ_K, 1, 0, table.audit],
    [BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM],
    [BPF_LD_W_ABS, 0, 0, OFFSET_NR],
  ];
  const jumps: number[] = [];
  if (table.x32Bit) {
    jumps.push(insns.length);
    insns.push([BPF_JGE_K, 0, 0, X32_SYSCALL_BIT]);
  }
  for (const nr of Object.values(table.denied)) {
    jumps.push(insns.length);
    insns.push([BPF_JEQ_K, 0, 0, nr]);
  }
  const toFlags: number[] = [];
  for (const nr of Object.values(table.namespaceFlags)) {
    toFlags.push(insns.length);
    insns.push([BPF_JEQ_K, 0, 0, nr]);
  }
  const toNosys = insns.length;
  insns.push([BPF_JEQ_K, 0, 0, table.clone3]);
  insns.push([BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW]);
  const flags = insns.length;
  insns.push([BPF_LD_W_ABS, 0, 0, OFFSET_ARG0_LOW]);
  jumps.push(insns.length);
  insns.push([BPF_JSET_K, 0, 0, CLONE_NEWUSER]);
  insns.push([BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW]);
  const nosys = insns.length;
  insns.push([BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS]);
  const deny = insns.length;
  insns.push([BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM]);
  for (const i of jumps) insns[i]![1] = deny - i - 1;
  for (const i of toFlags) insns[i]![1] = flags - i - 1;
  insns[toNosys]![1] = nosys - toNosys - 1;
  const out = Buffer.alloc(insns.length * 8);
  insns.forEach(([code, jt, jf, k], i) => {
    out.writeUInt16LE(code, i * 8);
    out.writeUInt8(jt, i * 8 + 2);
    out.writeUInt8(jf, i * 8 + 3);
    out.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return out;
}
