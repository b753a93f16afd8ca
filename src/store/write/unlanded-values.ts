/**
 * The lifetime of the values a writer's tree holds: each set value is copied into chunks that are reused, held by
 * its leaf until its version is on disk, then dropped from the leaf (the value rows answer from then on) and its
 * chunk released for the values of later versions.
 * @module
 */
import { ValueArena } from "../../base/value-arena.js";
import type { NodeTable } from "../../tree/node.js";

/** The leaves of a version whose values wait for it to land. */
interface Waiting {
  version: number;
  leaves: number[];
  /** Each leaf's sequence (its leaves row) when sealed. */
  seqs: number[];
}

/** Values of versions not yet on disk. */
export class UnlandedValues {
  private readonly arena = new ValueArena();
  private readonly waiting: Waiting[] = [];

  constructor(private readonly t: NodeTable) {}

  /** The tree's own copy of a value being set: valid until its version lands. */
  copy(value: Uint8Array): Uint8Array {
    return this.arena.copy(value);
  }

  /**
   * Every value copied since the last seal belongs to `version`, being committed with `leaves`. Sealed before the
   * write: a commit that fails is retried at the same version, which releases these too.
   */
  seal(version: number, leaves: number[]): void {
    this.arena.seal(version);
    this.waiting.push({ version, leaves, seqs: leaves.map((n) => this.t.seq(n)) });
  }

  /** Versions ≤ `version` are on disk: their leaves drop their values, whose memory takes later versions' values. */
  landed(version: number): void {
    while (this.waiting.length > 0 && this.waiting[0]!.version <= version) {
      const w = this.waiting.shift()!;
      // A leaf replaced and freed before its version landed may have lent its id to another node: its sequence, a
      // leaves row id, tells.
      w.leaves.forEach((n, i) => {
        if (this.t.seq(n) === w.seqs[i]) this.t.setValue(n, undefined);
      });
    }
    this.arena.release(version);
  }
}
