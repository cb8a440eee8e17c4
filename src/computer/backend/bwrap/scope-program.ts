/**
 * `paddock-scope`: the launcher that puts each job and terminal of a computer in a Landlock
 * domain of its own before it execs the job's shell.
 *
 * Why: every job and terminal of a computer runs as the same guest account, so without more the
 * kernel lets one job open another's `/proc/<pid>/environ` (its tool-channel nonce) and
 * `/proc/<pid>/mem` (to write code into it and call tools as its caller). Landlock confines
 * ptrace-mode access to a process's own domain and the domains nested in it: a job may still
 * inspect its own children, but no sibling job, terminal or the guest agent.
 *
 * The ruleset handles only two filesystem rights, both granted beneath `/`, so it forbids
 * nothing a job could do before: making block devices (which the unprivileged guest account
 * cannot do anyway) and moving files between directories (which Landlock would otherwise refuse
 * by default once any filesystem right is handled). Signals and abstract sockets stay unscoped:
 * a job may still stop a server another job started.
 *
 * The program is a static x86-64 ELF of a few hundred bytes, assembled here so that nothing needs
 * a compiler; it is bound read-only into the sandbox. `paddock-scope PROGRAM ARG…` execs PROGRAM
 * inside the new domain; with no arguments it only checks that the domain can be made (exit 0),
 * which the guest agent does once at start. Exit 126 means Landlock refused, 127 that PROGRAM
 * could not be started. Other architectures get no launcher (the guest reports it).
 *
 * `paddock-scope --confine TOKEN… -- PROGRAM ARG…` is its second mode, which the `shell`
 * built-in's jobs take at their last step: PROGRAM may then execute and write only what the
 * tokens allow (see confine-program.ts).
 */

import { emitConfine, emitConfineDispatch } from './confine-program.js';
import { Assembler, elf } from './elf-assembler.js';

// Linux x86-64 system call numbers and flags
const SYS = {
  write: 1,
  open: 2,
  close: 3,
  execve: 59,
  exitGroup: 231,
  prctl: 157,
  getuid: 102,
  capget: 125,
  capset: 126,
};
const LINUX_CAPABILITY_VERSION_3 = 0x20080522;
/**
 * Capabilities root keeps inside a computer on an image whose profile says `user: root`
 * (CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER): enough for dpkg and apt to own and replace the
 * image's files; never one to change uid, signal or trace another account, mount or make devices.
 */
export const ROOT_JOB_CAPABILITIES = (1 << 0) | (1 << 1) | (1 << 3);
const SYS_LANDLOCK = { createRuleset: 444, addRule: 445, restrictSelf: 446 };
const PR_SET_NO_NEW_PRIVS = 38;
const O_PATH_CLOEXEC = 0x200000 | 0x80000;
const LANDLOCK_RULE_PATH_BENEATH = 1;
/** LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_REFER. */
const HANDLED_FS = (1 << 11) | (1 << 13);

const REFUSED =
  'paddock-scope: the kernel refused a Landlock domain for this job (Linux 5.19 or newer with Landlock enabled is needed)\n';
const NOT_STARTED = 'paddock-scope: the program could not be started\n';
const CAPS_KEPT = 'paddock-scope: the capabilities of the job could not be dropped\n';

/**
 * Every job starts without capabilities, save root's few (ROOT_JOB_CAPABILITIES) when it runs as
 * uid 0: whatever the agent held (on an image the agent's capabilities are ambient, since it is not
 * uid 0) is dropped from the effective, permitted and inheritable sets — which empties the ambient
 * set — before anything of the job runs. With no_new_privs (bwrap sets it for the whole sandbox),
 * an exec cannot give them back. Exit 126 when the kernel refuses.
 */
function emitCapabilityDrop(a: Assembler): void {
  a.emit(0x48, 0x83, 0xec, 0x20); // sub rsp, 32: [rsp] header, [rsp+8] two data structs
  a.emit(0xc7, 0x04, 0x24).imm32(LINUX_CAPABILITY_VERSION_3); // mov dword [rsp], version
  a.emit(0xc7, 0x44, 0x24, 0x04).imm32(0); // mov dword [rsp+4], 0 (this process)
  a.emit(0x48, 0x89, 0xe7); // mov rdi, rsp
  a.emit(0x48, 0x8d, 0x74, 0x24, 0x08); // lea rsi, [rsp+8]
  a.movEax(SYS.capget).syscall().testRax().jnz('capsKept');
  a.movEax(SYS.getuid).syscall();
  a.emit(0xb9).imm32(ROOT_JOB_CAPABILITIES); // mov ecx, ROOT_JOB_CAPABILITIES
  a.emit(0x85, 0xc0); // test eax, eax
  a.jz('capsMask');
  a.emit(0x31, 0xc9); // xor ecx, ecx
  a.label('capsMask');
  a.emit(0x21, 0x4c, 0x24, 0x08); // and [rsp+8], ecx   (effective, 0–31)
  a.emit(0x21, 0x4c, 0x24, 0x0c); // and [rsp+12], ecx  (permitted, 0–31)
  for (const at of [0x10, 0x14, 0x18, 0x1c]) a.emit(0xc7, 0x44, 0x24, at).imm32(0); // inheritable, 32–63
  a.emit(0xc7, 0x04, 0x24).imm32(LINUX_CAPABILITY_VERSION_3);
  a.emit(0x48, 0x89, 0xe7); // mov rdi, rsp
  a.emit(0x48, 0x8d, 0x74, 0x24, 0x08); // lea rsi, [rsp+8]
  a.movEax(SYS.capset).syscall().testRax().jnz('capsKept');
  a.emit(0x48, 0x83, 0xc4, 0x20); // add rsp, 32
  a.jmp('capsDropped');
  a.label('capsKept');
  a.movEdi(2).leaRsi('capsText').movEdx(CAPS_KEPT.length).movEax(SYS.write).syscall();
  a.movEdi(126).movEax(SYS.exitGroup).syscall();
  a.label('capsDropped');
}

function code(): Buffer {
  const a = new Assembler();
  a.emit(0x48, 0x89, 0xe3); // mov rbx, rsp (argc, argv…, NULL, envp…)
  emitCapabilityDrop(a);
  emitConfineDispatch(a);
  a.label('scope');
  // prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0): Landlock needs it from an unprivileged process
  a.movEdi(PR_SET_NO_NEW_PRIVS).movEsi(1);
  a.emit(0x31, 0xd2, 0x45, 0x31, 0xd2, 0x45, 0x31, 0xc0); // xor edx,edx; xor r10d,r10d; xor r8d,r8d
  a.movEax(SYS.prctl).syscall().testRax().jnz('refused');
  // ruleset = landlock_create_ruleset(&{handled_access_fs}, 8, 0)
  a.leaRdi('attr').movEsi(8).emit(0x31, 0xd2); // xor edx, edx
  a.movEax(SYS_LANDLOCK.createRuleset).syscall().testRax().js('refused');
  a.emit(0x49, 0x89, 0xc4); // mov r12, rax
  // root = open("/", O_PATH | O_CLOEXEC)
  a.leaRdi('slash').movEsi(O_PATH_CLOEXEC).emit(0x31, 0xd2); // xor edx, edx
  a.movEax(SYS.open).syscall().testRax().js('refused');
  a.emit(0x49, 0x89, 0xc5); // mov r13, rax
  // landlock_add_rule(ruleset, PATH_BENEATH, &{allowed_access, parent_fd} (packed, on the stack), 0)
  a.emit(0x48, 0x83, 0xec, 0x10); // sub rsp, 16
  a.emit(0x48, 0xc7, 0x04, 0x24).imm32(HANDLED_FS); // mov qword [rsp], HANDLED_FS
  a.emit(0x44, 0x89, 0x6c, 0x24, 0x08); // mov dword [rsp+8], r13d
  a.emit(0x4c, 0x89, 0xe7); // mov rdi, r12
  a.movEsi(LANDLOCK_RULE_PATH_BENEATH);
  a.emit(0x48, 0x89, 0xe2); // mov rdx, rsp
  a.emit(0x45, 0x31, 0xd2); // xor r10d, r10d
  a.movEax(SYS_LANDLOCK.addRule).syscall().testRax().jnz('refused');
  a.emit(0x4c, 0x89, 0xef).movEax(SYS.close).syscall(); // close(root)
  // landlock_restrict_self(ruleset, 0)
  a.emit(0x4c, 0x89, 0xe7, 0x31, 0xf6); // mov rdi, r12; xor esi, esi
  a.movEax(SYS_LANDLOCK.restrictSelf).syscall().testRax().jnz('refused');
  a.emit(0x4c, 0x89, 0xe7).movEax(SYS.close).syscall(); // close(ruleset)
  // execve(argv[1], &argv[1], envp); no argv[1]: the check alone, exit 0
  a.emit(0x48, 0x8b, 0x0b); // mov rcx, [rbx]          (argc)
  a.emit(0x48, 0x8d, 0x73, 0x10); // lea rsi, [rbx+16]  (&argv[1])
  a.emit(0x48, 0x8b, 0x3e); // mov rdi, [rsi]
  a.emit(0x48, 0x85, 0xff); // test rdi, rdi
  a.jz('checked');
  a.emit(0x48, 0x8d, 0x54, 0xcb, 0x10); // lea rdx, [rbx+rcx*8+16] (envp)
  a.movEax(SYS.execve).syscall();
  a.movEdi(2).leaRsi('notStarted').movEdx(NOT_STARTED.length).movEax(SYS.write).syscall();
  a.movEdi(127).jmp('exit');
  a.label('checked').emit(0x31, 0xff).jmp('exit'); // xor edi, edi
  a.label('refused');
  a.movEdi(2).leaRsi('refusedText').movEdx(REFUSED.length).movEax(SYS.write).syscall();
  a.movEdi(126);
  a.label('exit').movEax(SYS.exitGroup).syscall();
  // data
  a.label('attr');
  const attr = Buffer.alloc(8);
  attr.writeBigUInt64LE(BigInt(HANDLED_FS));
  a.emit(...attr);
  a.label('slash').emit(0x2f, 0);
  a.label('refusedText').emit(...Buffer.from(REFUSED));
  a.label('capsText').emit(...Buffer.from(CAPS_KEPT));
  a.label('notStarted').emit(...Buffer.from(NOT_STARTED));
  emitConfine(a);
  return a.finish();
}

/** The launcher for this host's architecture, or null where there is none (not x86-64). */
export function scopeProgram(arch: string = process.arch): Buffer | null {
  return arch === 'x64' ? elf(code()) : null;
}
