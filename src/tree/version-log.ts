/**
 * What the working version changed, as a store needs it at commit: every operation in order (exact replay needs the
 * order when a key is touched twice), the net change of each key, and the leaf each set key ends with.
 * @module
 */
import { keyId } from "../base/bytes.js";
import type { Node } from "./node.js";

/** One operation of the working version, in order; `leaf` is the leaf a set created (undefined for a remove). */
export interface Op {
  key: Uint8Array;
  leaf: Node | undefined;
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
  /** The net change per key, keyed by {@link keyId}. */
  readonly changes = new Map<string, Change>();
  /** The leaf each key set in this version ends with, keyed by {@link keyId}. */
  readonly finalLeaves = new Map<string, Node>();

  /** Records a set of `key` (already copied) to `leaf`. */
  set(key: Uint8Array, leaf: Node): void {
    const id = keyId(key);
    this.ops.push({ key, leaf });
    this.changes.set(id, { key, value: leaf.value ?? null });
    this.finalLeaves.set(id, leaf);
  }

  /** Records a removal of `key` (already copied), which was present. */
  remove(key: Uint8Array): void {
    const id = keyId(key);
    this.ops.push({ key, leaf: undefined });
    this.changes.set(id, { key, value: null });
    this.finalLeaves.delete(id);
  }

  /** The net change of `key` in this version, if any. */
  change(key: Uint8Array): Change | undefined {
    return this.changes.get(keyId(key));
  }
}

/** What a store receives to persist one version. */
export interface CommitInput {
  version: number;
  root: Node | undefined;
  hash: Uint8Array;
  log: VersionLog;
}
