/**
 * What every version of a simulated store should hold: a plain map per committed version, the operations that made
 * it, and its root hash from a `Tree.memory()` mirror fed the same operations (the tree's shape, and so its hash,
 * depends on their order, not only on the final map).
 * @module
 */
import { toHex, Tree } from "../src/index.js";

/** A set (`v` the value) or a removal (`v` null) of key number `k`. */
export interface Op {
  k: number;
  v: Uint8Array | null;
}

/** One net change of a version, as `changes()` should give it. */
export interface Change {
  key: string;
  value: Uint8Array | null;
}

/** A committed version of one history. */
export interface Rec {
  version: number;
  /** Bumped by every rollback: readers that began in one history must never see another's data. */
  epoch: number;
  /** Key (hex) → value. */
  content: Map<string, Uint8Array>;
  ops: Op[];
  hash: string;
  /** Net changes in key order. */
  changes: Change[];
}

/** Keys a life draws from: few enough that sets overwrite and removes hit. */
export const KEYS = 48;

/** The simulator's key number `k` as bytes: unique by its first byte, 1–40 bytes long. */
export function keyBytes(k: number): Uint8Array {
  const n = 1 + ((k * 7) % 40);
  const out = new Uint8Array(n);
  out[0] = k;
  for (let i = 1; i < n; i++) out[i] = (k * 31 + i * 17) & 0xff;
  return out;
}

export const keyHex = (k: number): string => toHex(keyBytes(k));

/** The histories of a simulated store. */
export class Model {
  /** The current history, by version. */
  readonly versions = new Map<number, Rec>();
  /** Every version of every history, by "version:hash": what a reader in another process may have read. */
  readonly ever = new Map<string, Rec>();
  epoch = 0;
  private work = new Map<string, Uint8Array>();
  private pending: Op[] = [];
  private mirror: Tree;

  constructor(readonly initialVersion: number) {
    this.mirror = Tree.memory({ initialVersion });
  }

  get latest(): number {
    return this.mirror.version;
  }

  /** The keys of the working state. */
  workingKeys(): number[] {
    const out: number[] = [];
    for (let k = 0; k < KEYS; k++) if (this.work.has(keyHex(k))) out.push(k);
    return out;
  }

  apply(op: Op): void {
    this.pending.push(op);
    const key = keyBytes(op.k);
    if (op.v === null) {
      this.mirror.remove(key);
      this.work.delete(toHex(key));
    } else {
      this.mirror.set(key, op.v);
      this.work.set(toHex(key), op.v);
    }
  }

  commit(): Rec {
    const prev = this.versions.get(this.latest);
    const { version, hash } = this.mirror.commit();
    const last = new Map<string, Op>();
    for (const op of this.pending) last.set(keyHex(op.k), op);
    const changes: Change[] = [];
    for (const [key, op] of [...last].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
      if (op.v !== null) changes.push({ key, value: op.v });
      else if (prev?.content.has(key) === true) changes.push({ key, value: null });
    }
    const rec: Rec = { version, epoch: this.epoch, content: new Map(this.work), ops: this.pending, hash: toHex(hash), changes };
    this.versions.set(version, rec);
    this.ever.set(`${version}:${rec.hash}`, rec);
    this.pending = [];
    return rec;
  }

  /** The working state drops what was not committed (a writer closed or killed before its commit). */
  discardWork(): void {
    if (this.pending.length === 0) return;
    this.rebuild(this.latest);
  }

  /** Versions after `version` are gone; a new history begins after it. */
  rollback(version: number): void {
    for (const v of [...this.versions.keys()]) if (v > version) this.versions.delete(v);
    this.epoch++;
    this.rebuild(version);
  }

  /** Replays the operations of the current history up to `version` into a fresh mirror. */
  private rebuild(version: number): void {
    this.mirror = Tree.memory({ initialVersion: this.initialVersion });
    this.pending = [];
    this.work = new Map();
    for (let v = this.initialVersion; v <= version; v++) {
      const rec = this.versions.get(v)!;
      for (const op of rec.ops) this.apply(op);
      this.pending = [];
      const { hash } = this.mirror.commit();
      if (toHex(hash) !== rec.hash) throw new Error(`the model's mirror replayed version ${v} to another hash`);
    }
  }
}
