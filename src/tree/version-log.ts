/**
 * What the working version changed, as a store needs it at commit: every operation in order (exact replay needs the
 * order when a key is touched twice), which of them is the last on its key, and the net change of each key.
 * @module
 */
import { latin1, type ByteString } from "../base/bytes.js";
import { NONE } from "./node.js";

/** One operation of the working version, in order. */
export interface Op {
  key: Uint8Array;
  /**
   * The leaf a set created ({@link NONE} for a remove). Only the last operation on a key still holds its leaf: the
   * leaf of an earlier set was replaced within the version and freed, so its id may name another node by now.
   */
  leaf: number;
  /** True while no later operation of the version touched the same key. */
  last: boolean;
  /** The key was in the tree before this version (as its first operation in the version found it). */
  existed: boolean;
}

/** The net change of one key in the working version (null = removed). */
export interface Change {
  key: Uint8Array;
  value: Uint8Array | null;
}

/** The operations of one working version. */
export class VersionLog {
  /** Every set and remove, in order. */
  readonly ops: Op[] = [];
  /** The net change per key, keyed by {@link latin1} string. */
  readonly changes = new Map<string, Change>();
  /** The index in {@link ops} of each key's last operation. */
  private readonly lastOp = new Map<string, number>();

  /**
   * Records a set of `key` (already copied; `id` is its {@link latin1} string) to `value`, held by `leaf`; `updated`: the key
   * was in the working tree already.
   */
  set(key: Uint8Array, id: ByteString, leaf: number, value: Uint8Array, updated: boolean): void {
    this.record(key, id, leaf, value, updated);
  }

  /** Records a removal of `key` (already copied; `id` is its {@link latin1} string), which was present. */
  remove(key: Uint8Array, id: ByteString): void {
    this.record(key, id, NONE, null, true);
  }

  /** The net change of `key` in this version, if any. */
  change(key: Uint8Array): Change | undefined {
    return this.changes.get(latin1(key));
  }

  private record(key: Uint8Array, id: ByteString, leaf: number, value: Uint8Array | null, found: boolean): void {
    const before = this.lastOp.get(id);
    // Whether the key was there before the version is what its first operation in the version found.
    let existed = found;
    if (before !== undefined) {
      const prior = this.ops[before]!;
      prior.last = false;
      existed = prior.existed;
    }
    this.lastOp.set(id, this.ops.length);
    this.ops.push({ key, leaf, last: true, existed });
    this.changes.set(id, { key, value });
  }
}

