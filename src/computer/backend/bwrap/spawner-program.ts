/**
 * `paddock-spawner`: the process that starts a computer's spare shells, so the guest agent never
 * forks itself for them.
 *
 * Why: a fork copies the parent's page tables. The guest agent is a Node process of 50–90 MB, so
 * each spawn blocked its event loop for 4–8 ms on a virtual machine, and a job that ran meanwhile
 * had its exit reported that much later. This program is a few hundred bytes: its forks cost
 * almost nothing and never block the agent.
 *
 * How it is used: the agent starts it once with the spare's argv (`paddock-spawner PROGRAM ARG…`,
 * an empty environment, cwd `/`) and with K sets of three descriptors from fd 3 on: set i is
 * fds 3+3i (the spare's stdout), 4+3i (stderr) and 5+3i (the hold pipe, the spare's fd 3).
 * - fd 0 takes requests of 12 bytes: { u32 set, u32 uid, u32 gid } (uid 0xffffffff: keep the
 *   spawner's own account). End of file, a short read or a set ≥ 1024 ends the spawner.
 * - For each request it forks a waiter, which forks the spare: the spare makes a new session,
 *   drops to uid/gid with no supplementary groups, takes set i as fds 1, 2, 3 and /dev/null as
 *   fd 0, closes every other descriptor (close_range) and execs PROGRAM. Any failure there exits
 *   127 before the exec.
 * - The waiter closes its descriptors but fd 1, reports { 1, set, pid, 0 }, waits for the spare
 *   and reports { 2, set, pid, wait status }, then exits. A fork that fails reports
 *   { 3, set, -errno, 0 }. Every report is 16 bytes on fd 1 (one write, atomic on a pipe).
 * - The spawner closes its copy of the set and reaps ended waiters before each request.
 *
 * It runs as the agent's account, not the jobs': a job can neither signal it nor its waiters
 * (which would lose another job's exit status), and it is outside every job's Landlock domain.
 * x86-64 only, like paddock-scope; elsewhere the agent spawns spares itself.
 */

import { Assembler, elf } from './elf-assembler.js';

/** Sets one spawner can serve (a request naming a larger set ends it). */
export const SPAWNER_MAX_SETS = 1024;
/** Bytes of one request and of one report. */
export const SPAWNER_REQUEST_BYTES = 12;
export const SPAWNER_REPORT_BYTES = 16;
/** Report kinds. */
export const SpawnerReport = { Started: 1, Exited: 2, Failed: 3 } as const;

// Linux x86-64 system call numbers
const SYS = {
  read: 0,
  write: 1,
  open: 2,
  close: 3,
  dup2: 33,
  fork: 57,
  execve: 59,
  exit: 60,
  wait4: 61,
  setsid: 112,
  setresuid: 117,
  setresgid: 119,
  setgroups: 116,
  exitGroup: 231,
  closeRange: 436,
};
const WNOHANG = 1;
const EINTR = -4;

/** Writes the 16-byte report at [rsp] to fd 1. */
function report(a: Assembler): void {
  a.movEdi(1).emit(0x48, 0x89, 0xe6).movEdx(SPAWNER_REPORT_BYTES).movEax(SYS.write).syscall(); // mov rsi, rsp
}

/** Fills [rsp] with { kind, r12d (the set), eax, 0 }. */
function failure(a: Assembler): void {
  a.emit(0xc7, 0x04, 0x24).imm32(SpawnerReport.Failed); // mov dword [rsp], 3
  a.emit(0x44, 0x89, 0x64, 0x24, 0x04); // mov [rsp+4], r12d
  a.emit(0x89, 0x44, 0x24, 0x08); // mov [rsp+8], eax
  a.emit(0xc7, 0x44, 0x24, 0x0c).imm32(0); // mov dword [rsp+12], 0
  report(a);
}

/** close(r13d + k) */
function closeSetFd(a: Assembler, k: number): void {
  if (k === 0)
    a.emit(0x44, 0x89, 0xef); // mov edi, r13d
  else a.emit(0x41, 0x8d, 0x7d, k); // lea edi, [r13+k]
  a.movEax(SYS.close).syscall();
}

/** dup2(r13d + k, target) */
function dupSetFd(a: Assembler, k: number, target: number): void {
  if (k === 0)
    a.emit(0x44, 0x89, 0xef); // mov edi, r13d
  else a.emit(0x41, 0x8d, 0x7d, k); // lea edi, [r13+k]
  a.movEsi(target).movEax(SYS.dup2).syscall();
}

/** close_range(first, ~0, 0); a failure exits 127 (no descriptor may leak into a spare). */
function closeFrom(a: Assembler, first: number): void {
  a.movEdi(first).movEsi(-1).emit(0x31, 0xd2).movEax(SYS.closeRange).syscall(); // xor edx, edx
  a.testRax().jnz('die');
}

function code(): Buffer {
  const a = new Assembler();
  a.emit(0x48, 0x89, 0xe3); // mov rbx, rsp (argc, argv…, NULL, envp…)
  a.emit(0x48, 0x83, 0xec, 0x10); // sub rsp, 16: the request, then the report
  // reap the waiters that have ended: wait4(-1, NULL, WNOHANG, NULL) while it returns a pid
  a.label('next');
  a.movEdi(-1).emit(0x31, 0xf6).movEdx(WNOHANG).emit(0x45, 0x31, 0xd2); // xor esi,esi; xor r10d,r10d
  a.movEax(SYS.wait4).syscall().testRax().jg('next');
  // read(0, rsp, 12): one request
  a.emit(0x31, 0xff, 0x48, 0x89, 0xe6).movEdx(SPAWNER_REQUEST_BYTES); // xor edi,edi; mov rsi,rsp
  a.emit(0x31, 0xc0).syscall(); // xor eax, eax
  a.emit(0x48, 0x83, 0xf8, SPAWNER_REQUEST_BYTES).jnz('quit'); // cmp rax, 12
  a.emit(0x44, 0x8b, 0x24, 0x24); // mov r12d, [rsp]       (the set)
  a.emit(0x41, 0x81, 0xfc).imm32(SPAWNER_MAX_SETS).jae('quit'); // cmp r12d, MAX
  a.emit(0x47, 0x8d, 0x6c, 0x64, 0x03); // lea r13d, [r12+r12*2+3] (its first fd)
  a.movEax(SYS.fork).syscall().testRax().js('forkFailed').jz('waiter');
  for (const k of [0, 1, 2]) closeSetFd(a, k);
  a.jmp('next');
  a.label('forkFailed');
  failure(a);
  a.jmp('next');
  a.label('quit').emit(0x31, 0xff).movEax(SYS.exitGroup).syscall(); // xor edi, edi

  // the waiter: fork the spare, report it, wait for it, report its status
  a.label('waiter');
  a.movEax(SYS.fork).syscall().testRax().js('waiterFailed').jz('spare');
  a.emit(0x49, 0x89, 0xc6); // mov r14, rax (the spare's pid)
  closeFrom(a, 3);
  a.emit(0x31, 0xff).movEax(SYS.close).syscall(); // close(0)
  a.emit(0xc7, 0x04, 0x24).imm32(SpawnerReport.Started); // mov dword [rsp], 1
  a.emit(0x44, 0x89, 0x64, 0x24, 0x04); // mov [rsp+4], r12d
  a.emit(0x44, 0x89, 0x74, 0x24, 0x08); // mov [rsp+8], r14d
  a.emit(0xc7, 0x44, 0x24, 0x0c).imm32(0); // mov dword [rsp+12], 0
  report(a);
  a.label('wait');
  a.emit(0x44, 0x89, 0xf7); // mov edi, r14d
  a.emit(0x48, 0x8d, 0x74, 0x24, 0x0c); // lea rsi, [rsp+12] (the status lands in the report)
  a.emit(0x31, 0xd2, 0x45, 0x31, 0xd2); // xor edx, edx; xor r10d, r10d
  a.movEax(SYS.wait4).syscall();
  a.emit(0x48, 0x83, 0xf8, EINTR & 0xff).jz('wait'); // cmp rax, -4
  a.emit(0xc7, 0x04, 0x24).imm32(SpawnerReport.Exited); // mov dword [rsp], 2
  report(a);
  a.emit(0x31, 0xff).movEax(SYS.exitGroup).syscall(); // xor edi, edi
  a.label('waiterFailed');
  failure(a);
  a.jmp('die');

  // the spare: new session, the jobs' account, set i as fds 1-3, /dev/null as 0, nothing else
  a.label('spare');
  a.movEax(SYS.setsid).syscall();
  a.emit(0x83, 0x7c, 0x24, 0x04, 0xff).jz('identity'); // cmp dword [rsp+4], -1
  a.emit(0x31, 0xff, 0x31, 0xf6).movEax(SYS.setgroups).syscall().testRax().jnz('die'); // setgroups(0, NULL)
  a.emit(0x8b, 0x7c, 0x24, 0x08, 0x89, 0xfe, 0x89, 0xfa); // mov edi, [rsp+8]; mov esi, edi; mov edx, edi
  a.movEax(SYS.setresgid).syscall().testRax().jnz('die');
  a.emit(0x8b, 0x7c, 0x24, 0x04, 0x89, 0xfe, 0x89, 0xfa); // mov edi, [rsp+4]; mov esi, edi; mov edx, edi
  a.movEax(SYS.setresuid).syscall().testRax().jnz('die');
  a.label('identity');
  // out → 1, err → 2, hold → 3: in this order set 0 (fds 3, 4, 5) is copied before fd 3 is reused
  dupSetFd(a, 0, 1);
  dupSetFd(a, 1, 2);
  dupSetFd(a, 2, 3);
  a.leaRdi('devNull').emit(0x31, 0xf6, 0x31, 0xd2).movEax(SYS.open).syscall(); // open("/dev/null", O_RDONLY)
  a.testRax().js('die');
  a.emit(0x48, 0x89, 0xc7, 0x31, 0xf6).movEax(SYS.dup2).syscall(); // dup2(rax, 0)
  closeFrom(a, 4);
  // execve(argv[1], &argv[1], envp)
  a.emit(0x48, 0x8b, 0x0b); // mov rcx, [rbx]          (argc)
  a.emit(0x48, 0x8d, 0x73, 0x10); // lea rsi, [rbx+16]  (&argv[1])
  a.emit(0x48, 0x8b, 0x3e); // mov rdi, [rsi]
  a.emit(0x48, 0x8d, 0x54, 0xcb, 0x10); // lea rdx, [rbx+rcx*8+16] (envp)
  a.movEax(SYS.execve).syscall();
  a.label('die').movEdi(127).movEax(SYS.exit).syscall();
  a.label('devNull').emit(...Buffer.from('/dev/null\0', 'latin1'));
  return a.finish();
}

/** The spawner for this host's architecture, or null where there is none (not x86-64). */
export function spawnerProgram(arch: string = process.arch): Buffer | null {
  return arch === 'x64' ? elf(code()) : null;
}
