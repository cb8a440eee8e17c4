/**
 * The confining mode of `paddock-scope`: `paddock-scope --confine TOKEN… -- PROGRAM ARG…` runs
 * PROGRAM in a Landlock domain where it, and everything it starts, may execute only the files
 * the tokens name and write only beneath them. The `shell` built-in runs every program this way,
 * so an allowed program cannot be made into a launcher (`find -exec`, `git -c core.fsmonitor=…`,
 * `awk 'BEGIN{system(…)}'`) or into a writer outside `files.write`.
 *
 * The ruleset handles, for the kernel's Landlock ABI (queried at run time):
 * - EXECUTE, WRITE_FILE, REMOVE_DIR, REMOVE_FILE and every MAKE_* right (ABI 1);
 * - REFER (ABI 2: links and renames between directories), TRUNCATE (ABI 3).
 * Reading is not handled. Each token grants beneath one path, opened with
 * `openat2(…, RESOLVE_NO_SYMLINKS)` so that no link swapped in meanwhile redirects a rule:
 * - `x PATH`: EXECUTE (a file, or every file beneath a directory);
 * - `w PATH`: every write right but making devices, beneath a directory;
 * - `f PATH`: WRITE_FILE and TRUNCATE of one file.
 * A token whose path cannot be opened is skipped (it could only have granted more). The guest
 * agent makes the tokens (see the guest's confine.ts).
 *
 * Exit 126: Landlock refused, or the arguments are malformed (each with a message on stderr);
 * 127: PROGRAM could not be started (its path is named on stderr). Landlock checks `execve`, not
 * `mmap`: a program that can hand its own arguments to the dynamic loader (which must stay
 * executable for any dynamic program to start) can still map another readable program into
 * itself; whatever runs that way is bound by the same write rules.
 */
import { CONFINE_FLAG, ConfineToken } from '../../../guest/confine.js';
import type { Assembler } from './elf-assembler.js';

/** Linux x86-64 system call numbers. */
const SYS = { write: 1, close: 3, execve: 59, prctl: 157, exitGroup: 231, openat2: 437 };
const SYS_LANDLOCK = { createRuleset: 444, addRule: 445, restrictSelf: 446 };
const PR_SET_NO_NEW_PRIVS = 38;
const LANDLOCK_CREATE_RULESET_VERSION = 1;
const LANDLOCK_RULE_PATH_BENEATH = 1;

/** Landlock filesystem rights. */
export const FS = {
  execute: 1 << 0,
  writeFile: 1 << 1,
  removeDir: 1 << 4,
  removeFile: 1 << 5,
  makeChar: 1 << 6,
  makeDir: 1 << 7,
  makeReg: 1 << 8,
  makeSock: 1 << 9,
  makeFifo: 1 << 10,
  makeBlock: 1 << 11,
  makeSym: 1 << 12,
  refer: 1 << 13,
  truncate: 1 << 14,
} as const;

/** Rights handled on every ABI; REFER from ABI 2 and TRUNCATE from ABI 3 are added when the kernel has them. */
const HANDLED_ABI1 =
  FS.execute |
  FS.writeFile |
  FS.removeDir |
  FS.removeFile |
  FS.makeChar |
  FS.makeDir |
  FS.makeReg |
  FS.makeSock |
  FS.makeFifo |
  FS.makeBlock |
  FS.makeSym;

/** What each token grants (masked by what the kernel handles). */
export const GRANTS: Record<(typeof ConfineToken)[keyof typeof ConfineToken], number> = {
  [ConfineToken.Execute]: FS.execute,
  [ConfineToken.WriteBeneath]:
    FS.writeFile |
    FS.removeDir |
    FS.removeFile |
    FS.makeDir |
    FS.makeReg |
    FS.makeSock |
    FS.makeFifo |
    FS.makeSym |
    FS.refer |
    FS.truncate,
  [ConfineToken.WriteFile]: FS.writeFile | FS.truncate,
};

const O_PATH_CLOEXEC = 0x200000 | 0x80000;
const RESOLVE_NO_SYMLINKS = 0x04;
const AT_FDCWD = -100;

const PREFIX = 'paddock-scope: ';
const NOT_STARTED =
  " could not be started: it is missing, or this call's exec rule does not let it (or its interpreter) run\n";
const REFUSED =
  'paddock-scope: the kernel refused to confine the program (Landlock is needed: Linux 5.13 or newer with Landlock enabled)\n';
const USAGE = 'paddock-scope: usage: paddock-scope --confine x|w|fPATH... -- PROGRAM [ARG...]\n';

/** Whether argv[1] is {@link CONFINE_FLAG}: jumps to `confine` if so (rbx holds the initial rsp). */
export function emitConfineDispatch(a: Assembler): void {
  const flag = Buffer.alloc(8);
  flag.write(CONFINE_FLAG.slice(0, 8), 'latin1');
  const tail = CONFINE_FLAG.slice(8);
  if (CONFINE_FLAG.length !== 9) throw new Error('the confine flag must be 9 characters');
  a.emit(0x48, 0x8b, 0x73, 0x10); // mov rsi, [rbx+16]   (argv[1])
  a.emit(0x48, 0x85, 0xf6); // test rsi, rsi
  a.jz('scope');
  a.emit(0x48, 0xb8, ...flag); // mov rax, imm64
  a.emit(0x48, 0x39, 0x06); // cmp [rsi], rax
  a.jnz('scope');
  a.emit(0x66, 0x81, 0x7e, 0x08, tail.charCodeAt(0), 0x00); // cmp word [rsi+8], tail\0
  a.jz('confine');
}

/** The confining mode, at label `confine`; rbx holds the initial rsp. */
export function emitConfine(a: Assembler): void {
  a.label('confine');
  // prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
  a.movEdi(PR_SET_NO_NEW_PRIVS).movEsi(1);
  a.emit(0x31, 0xd2, 0x45, 0x31, 0xd2, 0x45, 0x31, 0xc0); // xor edx,edx; xor r10d,r10d; xor r8d,r8d
  a.movEax(SYS.prctl).syscall().testRax().jnz('cRefused');
  // abi = landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
  a.emit(0x31, 0xff, 0x31, 0xf6); // xor edi, edi; xor esi, esi
  a.movEdx(LANDLOCK_CREATE_RULESET_VERSION).movEax(SYS_LANDLOCK.createRuleset).syscall();
  a.testRax().js('cRefused');
  // r14 = rights handled on this ABI
  a.emit(0x41, 0xbe).imm32(HANDLED_ABI1); // mov r14d, imm32
  a.emit(0x48, 0x83, 0xf8, 0x02).emit(0x0f, 0x8c).rel32('cHandled'); // cmp rax, 2; jl
  a.emit(0x41, 0x81, 0xce).imm32(FS.refer); // or r14d, imm32
  a.emit(0x48, 0x83, 0xf8, 0x03).emit(0x0f, 0x8c).rel32('cHandled'); // cmp rax, 3; jl
  a.emit(0x41, 0x81, 0xce).imm32(FS.truncate); // or r14d, imm32
  a.label('cHandled');
  // r12 = landlock_create_ruleset(&{handled_access_fs: r14}, 8, 0); [rsp] is scratch from here
  a.emit(0x48, 0x83, 0xec, 0x10); // sub rsp, 16
  a.emit(0x4c, 0x89, 0x34, 0x24); // mov [rsp], r14
  a.emit(0x48, 0x89, 0xe7); // mov rdi, rsp
  a.movEsi(8).emit(0x31, 0xd2); // xor edx, edx
  a.movEax(SYS_LANDLOCK.createRuleset).syscall().testRax().js('cRefused');
  a.emit(0x49, 0x89, 0xc4); // mov r12, rax
  a.emit(0x4c, 0x8d, 0x7b, 0x18); // lea r15, [rbx+24]   (&argv[2])
  a.label('cToken');
  a.emit(0x49, 0x8b, 0x37); // mov rsi, [r15]
  a.emit(0x48, 0x85, 0xf6); // test rsi, rsi
  a.jz('cUsage');
  a.emit(0x0f, 0xb6, 0x06); // movzx eax, byte [rsi]
  a.emit(0x3c, 0x2d).emit(0x0f, 0x85).rel32('cKind'); // cmp al, '-'; jne
  a.emit(0x80, 0x7e, 0x01, 0x2d).emit(0x0f, 0x85).rel32('cKind'); // cmp byte [rsi+1], '-'; jne
  a.emit(0x80, 0x7e, 0x02, 0x00).jz('cRun'); // cmp byte [rsi+2], 0; je
  a.label('cKind');
  for (const [kind, grant] of Object.entries(GRANTS)) {
    a.emit(0x41, 0xbd).imm32(grant); // mov r13d, imm32
    a.emit(0x3c, kind.charCodeAt(0)).jz('cGrant'); // cmp al, kind; je
  }
  a.jmp('cUsage');
  a.label('cGrant');
  a.emit(0x4d, 0x21, 0xf5); // and r13, r14
  // fd = openat2(AT_FDCWD, path, &how, 24); a path that cannot be opened grants nothing
  a.emit(0x48, 0xc7, 0xc7).imm32(AT_FDCWD); // mov rdi, AT_FDCWD
  a.emit(0x48, 0xff, 0xc6); // inc rsi
  a.emit(0x48, 0x8d, 0x15).rel32('cHow'); // lea rdx, [rip+how]
  a.emit(0x41, 0xba).imm32(24); // mov r10d, 24
  a.movEax(SYS.openat2).syscall().testRax().js('cNext');
  // landlock_add_rule(r12, PATH_BENEATH, &{allowed_access: r13, parent_fd: eax} (packed), 0)
  a.emit(0x4c, 0x89, 0x2c, 0x24); // mov [rsp], r13
  a.emit(0x89, 0x44, 0x24, 0x08); // mov [rsp+8], eax
  a.emit(0x4c, 0x89, 0xe7); // mov rdi, r12
  a.movEsi(LANDLOCK_RULE_PATH_BENEATH);
  a.emit(0x48, 0x89, 0xe2); // mov rdx, rsp
  a.emit(0x45, 0x31, 0xd2); // xor r10d, r10d
  a.movEax(SYS_LANDLOCK.addRule).syscall();
  a.emit(0x48, 0x89, 0xc5); // mov rbp, rax
  a.emit(0x8b, 0x7c, 0x24, 0x08).movEax(SYS.close).syscall(); // mov edi, [rsp+8]; close(fd)
  a.emit(0x48, 0x85, 0xed).jnz('cRefused'); // test rbp, rbp
  a.label('cNext');
  a.emit(0x49, 0x83, 0xc7, 0x08); // add r15, 8
  a.jmp('cToken');
  // landlock_restrict_self(r12, 0); close(r12); execve(argv after "--", …, envp)
  a.label('cRun');
  a.emit(0x4c, 0x89, 0xe7, 0x31, 0xf6); // mov rdi, r12; xor esi, esi
  a.movEax(SYS_LANDLOCK.restrictSelf).syscall().testRax().jnz('cRefused');
  a.emit(0x4c, 0x89, 0xe7).movEax(SYS.close).syscall(); // close(r12)
  a.emit(0x49, 0x8d, 0x77, 0x08); // lea rsi, [r15+8]
  a.emit(0x48, 0x8b, 0x3e); // mov rdi, [rsi]
  a.emit(0x48, 0x85, 0xff).jz('cUsage'); // test rdi, rdi
  a.emit(0x49, 0x89, 0xfd); // mov r13, rdi
  a.emit(0x48, 0x8b, 0x0b); // mov rcx, [rbx]          (argc)
  a.emit(0x48, 0x8d, 0x54, 0xcb, 0x10); // lea rdx, [rbx+rcx*8+16] (envp)
  a.movEax(SYS.execve).syscall();
  // "paddock-scope: PROGRAM could not be started…"
  a.movEdi(2).leaRsi('cPrefix').movEdx(PREFIX.length).movEax(SYS.write).syscall();
  a.emit(0x4c, 0x89, 0xee, 0x31, 0xd2); // mov rsi, r13; xor edx, edx
  a.label('cLength');
  a.emit(0x80, 0x3c, 0x16, 0x00).jz('cLengthDone'); // cmp byte [rsi+rdx], 0; je
  a.emit(0x48, 0xff, 0xc2).jmp('cLength'); // inc rdx
  a.label('cLengthDone');
  a.movEdi(2).movEax(SYS.write).syscall();
  a.movEdi(2).leaRsi('cNotStarted').movEdx(NOT_STARTED.length).movEax(SYS.write).syscall();
  a.movEdi(127).jmp('cExit');
  a.label('cUsage');
  a.movEdi(2).leaRsi('cUsageText').movEdx(USAGE.length).movEax(SYS.write).syscall();
  a.movEdi(126).jmp('cExit');
  a.label('cRefused');
  a.movEdi(2).leaRsi('cRefusedText').movEdx(REFUSED.length).movEax(SYS.write).syscall();
  a.movEdi(126);
  a.label('cExit').movEax(SYS.exitGroup).syscall();
  // data: struct open_how { flags, mode, resolve }
  a.label('cHow');
  const how = Buffer.alloc(24);
  how.writeBigUInt64LE(BigInt(O_PATH_CLOEXEC), 0);
  how.writeBigUInt64LE(BigInt(RESOLVE_NO_SYMLINKS), 16);
  a.emit(...how);
  a.label('cPrefix').emit(...Buffer.from(PREFIX));
  a.label('cNotStarted').emit(...Buffer.from(NOT_STARTED));
  a.label('cUsageText').emit(...Buffer.from(USAGE));
  a.label('cRefusedText').emit(...Buffer.from(REFUSED));
}
