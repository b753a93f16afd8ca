/**
 * The simulator's child-process MultiTree writer: opens the folder with the life's options and commits the versions
 * its seed draws, printing "committed V" after each. With prune on it starts `MultiTree.prune`s ("prune UPTO");
 * with a rollback index it closes after that many versions, picks a version every store keeps, prints
 * "rollback T", rolls the folder back (`MultiTree.rollback`), prints "rolledback T" and goes on from there. The
 * parent kills it with SIGKILL at a random moment and replays these lines into its model.
 */
import { MultiTree, type MultiTreeOptions } from "../src/index.js";
import { keyBytes } from "./model.js";
import { childMultiOps } from "./multi-life.js";

/** What the parent passes: the open options (stores in join order) and the child's own draw. */
export interface ChildArgs {
  dir: string;
  options: MultiTreeOptions & { stores: string[] };
  seed: number;
  versions: number;
  prune: boolean;
  rollbackAt: number;
  rollbackPick: number;
}

const a = JSON.parse(process.argv[2]!) as ChildArgs;
const say = (line: string): void => void process.stdout.write(`${line}\n`);
const names = a.options.stores;

let multi = MultiTree.open(a.dir, a.options);
say(`opened ${multi.version}`);

/** The versions every store of the folder keeps, read with the writer closed. */
function keptEverywhere(): number[] {
  const ro = MultiTree.openReadOnly(a.dir);
  try {
    const lists = ro.names.map((n) => new Set(ro.store(n).versions()));
    return [...lists[0]!].filter((v) => lists.every((l) => l.has(v))).sort((x, y) => x - y);
  } finally {
    ro.close();
  }
}

for (const [i, ops] of childMultiOps(a.seed, a.versions).entries()) {
  if (i === a.rollbackAt) {
    multi.close();
    const kept = keptEverywhere();
    if (kept.length > 0) {
      const to = kept[Math.floor(a.rollbackPick * kept.length)]!;
      say(`rollback ${to}`);
      MultiTree.rollback(a.dir, to);
      say(`rolledback ${to}`);
    }
    multi = MultiTree.open(a.dir, a.options);
    say(`opened ${multi.version}`);
  }
  for (const op of ops) {
    const t = multi.tree(names[op.s % names.length]!);
    if (op.v === null) t.remove(keyBytes(op.k));
    else t.set(keyBytes(op.k), op.v);
  }
  const { version } = multi.commit();
  say(`committed ${version}`);
  if (a.prune && i % 6 === 3 && version > 3) {
    say(`prune ${version - 3}`);
    // A prune cut short by the rollback's close (or by the kill) is expected.
    void multi.prune(version - 3).catch(() => undefined);
  }
  // The event loop turns now and then, so that prunes run while versions are committed.
  if (i % 3 === 0) await new Promise((r) => setImmediate(r));
}
multi.close();
