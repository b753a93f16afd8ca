/**
 * The simulator's child writer on a full disk (node ignores SIGXFSZ): opens the store with the life's options,
 * prints "opened V BYTES" (BYTES: its largest file) and waits for "go" on stdin (the parent has set a file-size limit
 * on it). It commits the versions its seed draws, printing "committed V" after each; the first commit the disk
 * refuses (or the flush, with durability async) prints "full CODE MESSAGE" (the message as JSON) and waits for "space"
 * (the limit is lifted), then the same changes are committed again. It ends with a flush and a close, and prints
 * "closed".
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Tree } from "../src/index.js";
import { childOps, openOptions, type LifeOptions } from "./life.js";
import { keyBytes } from "./model.js";

const [dir, optionsJson, seed, versions] = process.argv.slice(2) as [string, string, string, string];
const o = JSON.parse(optionsJson) as LifeOptions;
const stdin = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const heard = async (word: string): Promise<void> => {
  const line = await stdin.next();
  if (line.done === true || line.value !== word) throw new Error(`expected "${word}" on stdin`);
};
const tree = Tree.open(dir, openOptions(o, o.durability));
const size = (f: string): number => {
  try {
    return statSync(join(dir, f)).size;
  } catch {
    return 0;
  }
};
process.stdout.write(`opened ${tree.version} ${Math.max(size("iavl.sqlite"), size("iavl.sqlite-wal"))}\n`);
await heard("go");
let full = false;
/** Runs `fn`; the first time the disk refuses it, reports that, waits for space and runs it again. */
async function once<T>(fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (full) throw e;
    full = true;
    const code = (e as { code?: unknown }).code;
    process.stdout.write(`full ${typeof code === "string" ? code : (e as Error).name} ${JSON.stringify((e as Error).message)}\n`);
    await heard("space");
    return await fn();
  }
}
for (const ops of childOps(Number(seed), Number(versions))) {
  for (const op of ops) {
    if (op.v === null) tree.remove(keyBytes(op.k));
    else tree.set(keyBytes(op.k), op.v);
  }
  const { version } = await once(() => tree.commit());
  process.stdout.write(`committed ${version}\n`);
}
// With durability async the disk may refuse a version only after every commit() returned.
await once(() => tree.flush());
tree.close();
process.stdout.write("closed\n");
process.exit(0);
