/**
 * A tiny x86-64 assembler and a static ELF wrapper: enough to build the few-hundred-byte programs
 * the host binds into a computer (`paddock-scope`, `paddock-spawner`) without a compiler.
 */

const LOAD_ADDRESS = 0x400000;
const ELF_HEADER_BYTES = 64;
const PROGRAM_HEADER_BYTES = 56;
const CODE_OFFSET = ELF_HEADER_BYTES + 2 * PROGRAM_HEADER_BYTES;

/** A tiny x86-64 assembler: the instructions this program needs, with labels for jumps and data. */
export class Assembler {
  private readonly bytes: number[] = [];
  private readonly labels = new Map<string, number>();
  private readonly fixups: { at: number; label: string }[] = [];

  emit(...b: number[]): this {
    this.bytes.push(...b);
    return this;
  }

  imm32(n: number): this {
    const b = Buffer.alloc(4);
    b.writeInt32LE(n);
    return this.emit(...b);
  }

  /** A 32-bit displacement to `label`, relative to the end of this field (jumps and rip-relative). */
  rel32(label: string): this {
    this.fixups.push({ at: this.bytes.length, label });
    return this.emit(0, 0, 0, 0);
  }

  label(name: string): this {
    this.labels.set(name, this.bytes.length);
    return this;
  }

  movEax(n: number): this {
    return this.emit(0xb8).imm32(n);
  }
  movEdi(n: number): this {
    return this.emit(0xbf).imm32(n);
  }
  movEsi(n: number): this {
    return this.emit(0xbe).imm32(n);
  }
  movEdx(n: number): this {
    return this.emit(0xba).imm32(n);
  }
  syscall(): this {
    return this.emit(0x0f, 0x05);
  }
  /** test rax, rax */
  testRax(): this {
    return this.emit(0x48, 0x85, 0xc0);
  }
  jnz(label: string): this {
    return this.emit(0x0f, 0x85).rel32(label);
  }
  js(label: string): this {
    return this.emit(0x0f, 0x88).rel32(label);
  }
  jz(label: string): this {
    return this.emit(0x0f, 0x84).rel32(label);
  }
  jg(label: string): this {
    return this.emit(0x0f, 0x8f).rel32(label);
  }
  /** jae (unsigned) */
  jae(label: string): this {
    return this.emit(0x0f, 0x83).rel32(label);
  }
  jmp(label: string): this {
    return this.emit(0xe9).rel32(label);
  }
  /** lea rdi, [rip + label] */
  leaRdi(label: string): this {
    return this.emit(0x48, 0x8d, 0x3d).rel32(label);
  }
  /** lea rsi, [rip + label] */
  leaRsi(label: string): this {
    return this.emit(0x48, 0x8d, 0x35).rel32(label);
  }

  /** The code with every label resolved. */
  finish(): Buffer {
    const out = Buffer.from(this.bytes);
    for (const { at, label } of this.fixups) {
      const target = this.labels.get(label);
      if (target === undefined) throw new Error(`assembler: no label ${label}`);
      out.writeInt32LE(target - (at + 4), at);
    }
    return out;
  }
}

/** A static executable whose one loadable segment is the ELF header followed by `body`. */
export function elf(body: Buffer): Buffer {
  const size = CODE_OFFSET + body.length;
  const h = Buffer.alloc(CODE_OFFSET);
  h.write('\x7fELF', 0, 'latin1');
  h.writeUInt8(2, 4); // 64-bit
  h.writeUInt8(1, 5); // little-endian
  h.writeUInt8(1, 6); // ELF version
  h.writeUInt16LE(2, 16); // ET_EXEC
  h.writeUInt16LE(0x3e, 18); // x86-64
  h.writeUInt32LE(1, 20);
  h.writeBigUInt64LE(BigInt(LOAD_ADDRESS + CODE_OFFSET), 24); // entry
  h.writeBigUInt64LE(BigInt(ELF_HEADER_BYTES), 32); // program headers
  h.writeUInt16LE(ELF_HEADER_BYTES, 52);
  h.writeUInt16LE(PROGRAM_HEADER_BYTES, 54);
  h.writeUInt16LE(2, 56);
  // PT_LOAD of the whole file, read + execute
  let p = ELF_HEADER_BYTES;
  h.writeUInt32LE(1, p);
  h.writeUInt32LE(5, p + 4);
  h.writeBigUInt64LE(0n, p + 8);
  h.writeBigUInt64LE(BigInt(LOAD_ADDRESS), p + 16);
  h.writeBigUInt64LE(BigInt(LOAD_ADDRESS), p + 24);
  h.writeBigUInt64LE(BigInt(size), p + 32);
  h.writeBigUInt64LE(BigInt(size), p + 40);
  h.writeBigUInt64LE(0x1000n, p + 48);
  // PT_GNU_STACK: a stack that is not executable
  p += PROGRAM_HEADER_BYTES;
  h.writeUInt32LE(0x6474e551, p);
  h.writeUInt32LE(6, p + 4);
  return Buffer.concat([h, body]);
}
