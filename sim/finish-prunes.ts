/**
 * What a multi-store life does before its end check of the stored branches (multi-runner.ts).
 * @module
 */
import type { MultiTree } from "../src/index.js";

/**
 * Prunes each of `names` to just before its oldest kept version, which removes nothing more but finishes a prune a
 * close cut short (its rows wait for the store's next prune). Store by store: a store never pruned (it keeps version
 * 1) must not stop the others', as one prune of the whole folder to its oldest version did (seed 1518313472).
 */
export async function finishPrunes(mt: MultiTree, names: readonly string[], keepEvery: number | undefined): Promise<void> {
  for (const name of names) {
    const first = mt.tree(name).versions()[0];
    if (first !== undefined && first > 1) await mt.tree(name).prune(first - 1, { keepEvery });
  }
}
