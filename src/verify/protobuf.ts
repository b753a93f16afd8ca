/**
 * A small reader of the protobuf wire format, just enough for the ICS23 messages. It reads from a view of the input
 * without copying, and every read is bounded by the bytes that are left, so a length that claims gigabytes fails at
 * once instead of allocating. Malformed input throws {@link Malformed}, which the decoder turns into a refusal.
 * @module
 */

/** A protobuf wire type: how a field's value is laid out. */
export const Wire = {
  VARINT: 0,
  FIXED64: 1,
  LEN: 2,
  FIXED32: 5,
} as const;

/** Raised by {@link ProtoReader} on bytes that are not a well-formed message; caught by the decoder. */
export class Malformed extends Error {}

/** Longest varint protobuf allows: ten bytes carry 64 bits. */
const MAX_VARINT_BYTES = 10;
/** Field numbers are below 2^29; a tag is (field << 3) | wire type and so below 2^32. */
const MAX_TAG = 0xffffffff;

/** One field's header: its number and wire type. */
export interface Tag {
  field: number;
  wire: number;
}

/** Reads one message's fields in order from `buf` (a view; nothing is copied). */
export class ProtoReader {
  private pos = 0;

  /** A reader of the whole of `buf`. */
  constructor(private readonly buf: Uint8Array) {}

  /** True once every byte was read. */
  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  /**
   * An unsigned varint as a Number: exact below 2^53, approximate above (callers only compare such values with small
   * bounds, which an approximation cannot cross). More than 64 bits, or bytes that run out, are malformed.
   */
  varint(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < MAX_VARINT_BYTES; i++) {
      if (this.pos >= this.buf.length) throw new Malformed("varint cut short");
      const byte = this.buf[this.pos++]!;
      // The tenth byte holds only bit 63.
      if (i === MAX_VARINT_BYTES - 1 && byte > 1) throw new Malformed("varint longer than 64 bits");
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 0x80;
    }
    throw new Malformed("varint longer than 64 bits");
  }

  /** The next field's header. Field 0 and tags beyond 32 bits are malformed. */
  tag(): Tag {
    const t = this.varint();
    if (t > MAX_TAG) throw new Malformed("tag beyond 32 bits");
    const field = Math.floor(t / 8);
    if (field === 0) throw new Malformed("field number 0");
    return { field, wire: t % 8 };
  }

  /** A length-delimited value: a view of the next `length` bytes, which must all be there. */
  bytes(): Uint8Array {
    const n = this.varint();
    if (n > this.buf.length - this.pos) throw new Malformed("length beyond the end of the message");
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  /**
   * Steps over a field of an unknown number. Groups (wire types 3 and 4, long deprecated) and types 6 and 7 are
   * malformed.
   */
  skip(wire: number): void {
    switch (wire) {
      case Wire.VARINT:
        this.varint();
        return;
      case Wire.LEN:
        this.bytes();
        return;
      case Wire.FIXED64:
        this.advance(8);
        return;
      case Wire.FIXED32:
        this.advance(4);
        return;
      default:
        throw new Malformed(`wire type ${wire}`);
    }
  }

  private advance(n: number): void {
    if (n > this.buf.length - this.pos) throw new Malformed("fixed-size value beyond the end of the message");
    this.pos += n;
  }
}
