/**
 * The simulator's child-process writer: opens the store with the life's options and commits the versions its seed
 * draws, printing "committed V" after each; with prune on, it also starts explicit prunes ("prune UPTO KEEPS").
 * The parent kills it with SIGKILL at a random moment.
 */
import { Tree } from "../src/index.js";
import { childOps, openOptions, type LifeOptions } from "./life.js";
import { keyBytes } from "./model.js";

const [dir, optionsJson, seed, versions, prune] = process.argv.slice(2) as [string, string, string, string, string];
const o = JSON.parse(optionsJson) as LifeOptions;
const tree = Tree.open(dir, openOptions(o, o.durability));
process.stdout.write(`opened ${tree.version}\n`);
const all = childOps(Number(seed), Number(versions));
for (const [i, ops] of all.entries()) {
  for (const op of ops) {
    if (op.v === null) tree.remove(keyBytes(op.k));
    else tree.set(keyBytes(op.k), op.v);
  }
  const { version } = tree.commit();
  process.stdout.write(`committed ${version}\n`);
  if (prune === "1" && i % 7 === 3 && version > 3) {
    const keeps = i % 2 === 0 && o.keepEvery !== undefined;
    process.stdout.write(`prune ${version - 3} ${keeps ? 1 : 0}\n`);
    void tree.prune(version - 3, { keepEvery: keeps ? o.keepEvery : undefined }).catch(() => undefined);
  }
  // The event loop turns now and then, so that prunes run while versions are committed.
  if (i % 3 === 0) await new Promise((r) => setImmediate(r));
}
await tree.flush();
tree.close();
