/**
 * A writer's reopen: the latest version's tree, rebuilt from its replay base and checked against its root hash; then
 * the rows of a checkpoint a crash cut short are removed, in one transaction with what the replay found the versions
 * since replaced (see sqlite/unfinished-checkpoints.ts).
 * @module
 */
import { NONE } from "../../tree/node.js";
import type { Latest } from "../../tree/store-contract.js";
import type { StoreWriter } from "../../sqlite/store-writer.js";
import type { NodeLoader } from "../node-loader.js";
import { rebuildVersion } from "../read/rebuild.js";
import { storedKeys } from "./version-rows.js";

/**
 * The latest version and its root in `src`. After a checkpoint cut short, the replay also gathers what each version
 * since the base replaced, which is recorded in the transaction that removes that checkpoint's rows: it had moved
 * pages of the base into its own, and the versions after its steps recorded its pages, not the base's.
 */
export function reopenLatest(store: StoreWriter, src: NodeLoader): Latest {
  const read = store.read;
  const cutShort = store.unfinishedCheckpoint();
  const latest = read.versions.latest();
  const replaced = new Map<number, number[]>();
  const hear = cutShort === undefined ? undefined : (v: number, nodes: readonly number[]): void => void replaced.set(v, storedKeys(src.t, nodes));
  const root = latest === undefined ? NONE : rebuildVersion(read, src, latest, undefined, hear);
  if (cutShort !== undefined) store.dropUnfinishedCheckpoint(cutShort, replaced);
  return { version: latest?.version ?? 0, root };
}
