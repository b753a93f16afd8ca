/**
 * What every version of a simulated multi-store folder should hold: one {@link Model} per store (a plain map per
 * version and a `Tree.memory()` mirror for its hash) and the app hash of each version, computed with the exported
 * `commitInfoHash` from the mirrors' hashes, never read from the store under test.
 * @module
 */
import { commitInfoHash, EMPTY_HASH, fromHex, toHex } from "../src/index.js";
import { Model, type Rec } from "./model.js";
import { STORE_NAMES, type MultiOp } from "./multi-life.js";

/** One history of the folder, frozen: what a reader saw when it refreshed. */
export interface History {
  version: number;
  /** App hash (hex) by version. */
  appHashes: Map<number, string>;
  /** Store → version → record. */
  recs: Map<string, Map<number, Rec>>;
}

/** The histories of a simulated multi-store folder. */
export class MultiModel {
  /** Stores in the order they joined (the order ops pick them in). */
  readonly stores = new Map<string, Model>();
  /** The first version each store committed (or will commit). */
  readonly joined = new Map<string, number>();
  /** App hash (hex) of each version of the current history. */
  readonly appHashes = new Map<number, string>();
  version = 0;

  constructor(stores: number) {
    for (let i = 0; i < stores; i++) this.add();
  }

  /** Names of the stores, in join order. */
  get order(): string[] {
    return [...this.stores.keys()];
  }

  /** The store op `s` picks. */
  nameOf(s: number): string {
    const order = this.order;
    return order[s % order.length]!;
  }

  /** Adds the next store of {@link STORE_NAMES} (false when all are in); it joins at the next version. */
  add(): boolean {
    const name = STORE_NAMES[this.stores.size];
    if (name === undefined) return false;
    this.stores.set(name, new Model(this.version + 1));
    this.joined.set(name, this.version + 1);
    return true;
  }

  store(name: string): Model {
    return this.stores.get(name)!;
  }

  /** Whether store `name` has committed a version yet (a store added on reopen has not until the next commit). */
  started(name: string): boolean {
    return this.store(name).latest >= this.joined.get(name)!;
  }

  apply(op: MultiOp): void {
    this.store(this.nameOf(op.s)).apply({ k: op.k, v: op.v });
  }

  /** Commits every store; the version, each store's hash and the app hash. */
  commit(): { version: number; hashes: Map<string, string>; appHash: string } {
    const hashes = new Map<string, string>();
    for (const [name, m] of this.stores) {
      const rec = m.commit();
      if (rec.version !== this.version + 1) throw new Error(`the model of ${name} committed ${rec.version}, expected ${this.version + 1}`);
      hashes.set(name, rec.hash);
    }
    this.version++;
    const appHash = appHashOf(hashes);
    this.appHashes.set(this.version, appHash);
    return { version: this.version, hashes, appHash };
  }

  /** The app hash of the working stores now: their latest hashes (a store not yet started has the empty tree's). */
  currentAppHash(): string {
    const hashes = new Map<string, string>();
    for (const [name, m] of this.stores) hashes.set(name, m.versions.get(m.latest)?.hash ?? toHex(EMPTY_HASH));
    return appHashOf(hashes);
  }

  discardWork(): void {
    for (const m of this.stores.values()) m.discardWork();
  }

  /** Every store back to `version` (which every store holds); a new history begins after it. */
  rollback(version: number): void {
    for (const m of this.stores.values()) m.rollback(version);
    for (const v of [...this.appHashes.keys()]) if (v > version) this.appHashes.delete(v);
    this.version = version;
  }

  rec(name: string, version: number): Rec | undefined {
    return this.stores.get(name)?.versions.get(version);
  }

  /** The current history, frozen (records are never changed, only replaced by a rollback). */
  snapshot(): History {
    const recs = new Map<string, Map<number, Rec>>();
    for (const [name, m] of this.stores) recs.set(name, new Map(m.versions));
    return { version: this.version, appHashes: new Map(this.appHashes), recs };
  }
}

/** The app hash (hex) of stores given as name → root hash (hex). */
export function appHashOf(hashes: ReadonlyMap<string, string>): string {
  return toHex(commitInfoHash(new Map([...hashes].map(([n, h]) => [n, fromHex(h)]))));
}
