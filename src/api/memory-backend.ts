/**
 * The backend of {@link Tree.memory}: committed roots kept in a map, sharing unchanged subtrees.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { MEMORY_SOURCE, type Node } from "../tree/node.js";
import { diffTrees, type KeyChange } from "../tree/diff.js";
import { memoryValue, RootView } from "../tree/root-view.js";
import type { ReadonlyTree } from "../tree/readonly-tree.js";
import type { CommitInput } from "../tree/version-log.js";
import type { PruneResult } from "../prune/pruner.js";
import type { Backend, Latest, PruneOptions } from "./backend.js";

/** Keeps every committed root in memory. */
export class MemoryBackend implements Backend {
  readonly src = MEMORY_SOURCE;
  readonly valueOf = memoryValue;
  readonly logsOps = false;
  readonly opened = { version: 0, root: undefined };
  private readonly roots = new Map<number, Node | undefined>();
  /** The first version committed (0: none yet). */
  private first = 0;
  /** Versions ≤ this were pruned. */
  private prunedTo = 0;

  copyValue(value: Uint8Array): Uint8Array {
    // A tree in memory keeps each value for as long as its key lives: packed copies would pin whole chunks.
    return new Uint8Array(value);
  }

  committedValue(): Uint8Array | undefined {
    throw new Error("iavlite: the memory backend reads through the tree");
  }

  commit(c: CommitInput): void {
    this.roots.set(c.version, c.root);
    if (this.first === 0) this.first = c.version;
  }

  changes(version: number, latest: Latest, alive: () => void): KeyChange[] {
    const after = this.view(version, latest, alive) as RootView;
    if (version > this.first && !this.roots.has(version - 1)) {
      throw new IavlError("VERSION_PRUNED", `the changes of version ${version} are gone with version ${version - 1}, which has been pruned`);
    }
    const before = version > this.first ? this.roots.get(version - 1) : undefined;
    return diffTrees(before, after.tree, version - 1, MEMORY_SOURCE, memoryValue).map((c) => ({ key: c.key, value: c.value?.slice() ?? null }));
  }

  view(version: number, latest: Latest, alive: () => void): ReadonlyTree {
    if (!this.roots.has(version)) {
      if (version <= this.prunedTo) throw new IavlError("VERSION_PRUNED", `version ${version} has been pruned`);
      throw new IavlError("VERSION_NOT_FOUND", `version ${version} was never committed (latest is ${latest.version})`);
    }
    return new RootView(version, this.roots.get(version), MEMORY_SOURCE, memoryValue, alive);
  }

  versions(): number[] {
    return [...this.roots.keys()];
  }

  async prune(upTo: number, opts: PruneOptions): Promise<PruneResult> {
    const versions = [...this.roots.keys()];
    const latest = versions[versions.length - 1] ?? 0;
    const every = opts.keepEvery;
    let pruned = 0;
    for (const v of versions) {
      if (v <= upTo && v < latest && (every === undefined || v % every !== 0) && this.roots.delete(v)) {
        pruned++;
        this.prunedTo = Math.max(this.prunedTo, v);
      }
    }
    return { pruned, keptFrom: this.roots.keys().next().value ?? 0, reclaimedBytes: 0, droppedShards: 0 };
  }

  async flush(): Promise<void> {}

  close(): void {
    this.roots.clear();
  }
}
