/**
 * The backend of {@link Tree.memory}: committed roots kept in a map, sharing unchanged subtrees in one node table.
 * A node leaves the table when the last version holding it is pruned.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { memorySource, NodeTable } from "../tree/node.js";
import { diffTrees } from "../tree/diff.js";
import { memoryValue, RootView } from "../tree/root-view.js";
import type { ReadonlyTree } from "../tree/readonly-tree.js";
import type { PruneResult } from "../prune/pruner.js";
import type { Backend, PruneOptions } from "./backend.js";
import { type CommitInput, type HistoryEntry, historyPage, type HistoryQuery, historyRange, type KeyChange, type KeyHistory, type KeyOp, type Latest } from "../tree/store-contract.js";
import { findLeaf } from "../tree/read.js";
import { latin1 } from "../base/bytes.js";
import { NONE } from "../tree/node.js";

/** Keeps every committed root in memory. */
export class MemoryBackend implements Backend {
  readonly t = new NodeTable();
  readonly src = memorySource(this.t);
  readonly valueOf = memoryValue;
  readonly logsOps = false;
  readonly opened: Latest = { version: 0, root: 0 };
  /** The root of each kept version, oldest first. */
  private readonly roots = new Map<number, number>();
  /**
   * For each version v, the nodes v replaced: a node of version c in v's list is held by versions c..v−1 only, so it
   * is freed once none of those is kept.
   */
  private readonly orphans = new Map<number, number[]>();
  /** The first version committed (0: none yet). */
  private first = 0;
  private latest = 0;
  /** Versions ≤ this were pruned. */
  private prunedTo = 0;

  copyValue(value: Uint8Array): Uint8Array {
    // A tree in memory keeps each value for as long as its key lives: packed copies would pin whole chunks.
    return new Uint8Array(value);
  }

  committedValue(): Uint8Array | undefined {
    throw new Error("iavlite: the memory backend reads through the tree");
  }

  /** Nothing to group: a version in memory is whole once committed. */
  beginGroup(): void {}

  endGroup(): void {}

  commit(c: CommitInput): void {
    this.roots.set(c.version, c.root);
    if (c.orphans.length > 0) this.orphans.set(c.version, c.orphans);
    if (this.first === 0) this.first = c.version;
    this.latest = c.version;
  }

  changes(version: number, alive: () => void): KeyChange[] {
    const after = this.view(version, alive) as RootView;
    if (version > this.first && !this.roots.has(version - 1)) {
      throw new IavlError("VERSION_PRUNED", `the changes of version ${version} are gone with version ${version - 1}, which has been pruned`);
    }
    const before = version > this.first ? this.roots.get(version - 1)! : 0;
    return diffTrees(before, after.tree, version - 1, this.src, memoryValue).map((c) => ({ key: c.key, value: c.value?.slice() ?? null }));
  }

  operations(version: number, alive: () => void): KeyOp[] {
    alive();
    throw new IavlError("VERSION_PRUNED", `a memory tree keeps no log of operations (version ${version})`);
  }

  history(key: Uint8Array, q: HistoryQuery, latest: number, alive: () => void): KeyHistory {
    alive();
    // Changes are known where the version before is kept too: from the first version of the unbroken kept run.
    let unbroken: number | undefined = this.roots.has(latest) ? latest : undefined;
    while (unbroken !== undefined && unbroken > this.first && this.roots.has(unbroken - 1)) unbroken--;
    const range = historyRange(q, unbroken, latest);
    const k = latin1(key);
    // A leaf of version v under v's root: the key was set at v; gone from a root that had it: removed there.
    const leafAt = (v: number): number => (this.roots.has(v) ? findLeaf(this.roots.get(v)!, k, this.src) : NONE);
    const entryAt = (v: number): HistoryEntry | undefined => {
      const leaf = leafAt(v);
      if (leaf !== NONE) return this.t.version(leaf) === v ? { version: v, value: this.t.value(leaf)!.slice() } : undefined;
      return leafAt(v - 1) !== NONE ? { version: v, value: null } : undefined;
    };
    const rows: HistoryEntry[] = [];
    const step = q.reverse ? 1 : -1;
    for (let v = q.reverse ? range.from : range.to; v >= range.from && v <= range.to && rows.length <= q.limit; v += step) {
      const e = entryAt(v);
      if (e !== undefined) rows.push(e);
    }
    if (!q.before) return historyPage(range, q, rows);
    let before: HistoryEntry | null | undefined = range.from === this.first ? null : undefined;
    if (range.from > unbroken!) {
      const leaf = leafAt(range.from - 1);
      before = leaf === NONE ? null : { version: this.t.version(leaf), value: this.t.value(leaf)!.slice() };
      // Removed: the version of the removal is the last one before from − 1 whose tree had it.
      if (leaf === NONE) for (let v = range.from - 1; v > unbroken! && before === null; v--) before = entryAt(v) ?? null;
    }
    return historyPage(range, q, rows, before);
  }

  view(version: number, alive: () => void): ReadonlyTree {
    const root = this.roots.get(version);
    if (root === undefined) throw this.gone(version);
    // Checked before every read and step: once the version is pruned its nodes may be freed and reused.
    const guard = (): void => {
      alive();
      if (this.roots.get(version) !== root) throw this.gone(version);
    };
    return new RootView(version, root, this.src, memoryValue, guard);
  }

  private gone(version: number): IavlError {
    if (version <= this.prunedTo) return new IavlError("VERSION_PRUNED", `version ${version} has been pruned`);
    return new IavlError("VERSION_NOT_FOUND", `version ${version} was never committed (latest is ${this.latest})`);
  }

  versions(): number[] {
    return [...this.roots.keys()];
  }

  async prune(upTo: number, opts: PruneOptions): Promise<PruneResult> {
    const every = opts.keepEvery;
    let pruned = 0;
    for (const v of [...this.roots.keys()]) {
      if (v <= upTo && v < this.latest && (every === undefined || v % every !== 0) && this.roots.delete(v)) {
        pruned++;
        this.prunedTo = Math.max(this.prunedTo, v);
      }
    }
    if (pruned > 0) this.freeOrphans(upTo);
    // As on disk: the first version past what any prune asked, the snapshots kept below it not counted.
    const keptFrom = Math.max(Math.min(upTo + 1, this.latest), this.prunedTo + 1);
    return { pruned, keptFrom, reclaimedBytes: 0, droppedShards: 0 };
  }

  /** Frees the orphans that no kept version holds any more, among those of versions ≤ `upTo` + 1. */
  private freeOrphans(upTo: number): void {
    const kept = [...this.roots.keys()]; // ascending: versions are committed in order
    const t = this.t;
    for (const [v, list] of this.orphans) {
      if (v > upTo + 1) break; // later lists are held by version v − 1, which is kept
      // The newest kept version before v: a node of this list is held while its version is at most that.
      const holder = newestBefore(kept, v);
      if (holder === 0) {
        // No kept version before v: nothing holds any of them (the usual case, pruning all but the latest).
        for (let k = 0; k < list.length; k++) t.retire(list[k]!);
        this.orphans.delete(v);
        continue;
      }
      const left = list.filter((n) => {
        if (t.version(n) <= holder) return true;
        t.retire(n);
        return false;
      });
      if (left.length === 0) this.orphans.delete(v);
      else this.orphans.set(v, left);
    }
  }

  async flush(): Promise<void> {}

  close(): void {
    this.roots.clear();
    this.orphans.clear();
  }
}

/** The greatest element of ascending `xs` below `v`, or 0. */
function newestBefore(xs: readonly number[], v: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (xs[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo === 0 ? 0 : xs[lo - 1]!;
}
