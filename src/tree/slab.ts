/**
 * Buffers that grow in place: the node table's records and the key arena are each one large buffer, reserved as
 * address space and backed only as it grows.
 * @module
 */

/**
 * A buffer of `bytes` that can grow in place up to `max` (a resizable ArrayBuffer: growing a slab of millions of
 * nodes by a copy held both copies at once: 160 MiB more peak RSS in a 1M-key churn), or a fixed one for `max` 0
 * or where the runtime refuses to reserve that much.
 */
export function slab(bytes: number, max: number): ArrayBuffer {
  if (max === 0) return new ArrayBuffer(bytes);
  try {
    return new ArrayBuffer(bytes, { maxByteLength: max });
  } catch {
    return new ArrayBuffer(bytes);
  }
}

/** `buf` grown to `bytes`: in place when it is resizable, else as a copy (a new buffer). */
export function grownTo(buf: ArrayBuffer, bytes: number): ArrayBuffer {
  if (buf.resizable) {
    buf.resize(bytes);
    return buf;
  }
  const to = new ArrayBuffer(bytes);
  new Uint8Array(to).set(new Uint8Array(buf));
  return to;
}
