/**
 * The `replicas` section, restoring: a store grown to 1M keys (quick: 100k) in versions of 10,000 sets, replicated by
 * Litestream to a file:// replica, then `iavlite restore`'s part that moves bytes (`litestream restore` of every file)
 * into a fresh folder, against a plain copy of the same database file. The restored folder opens at the store's
 * version with its root hash.
 * @module
 */
import { copyFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Tree, toHex } from "../src/index.js";
import { restoreReplicas } from "../src/cli/litestream.js";
import { startLitestream } from "./replicas-litestream.js";
import { floorOf, type Bench } from "./report.js";
import { grown } from "./scale-data.js";
import { applyToTree } from "./subjects.js";
import { int, mib } from "./timing.js";

const PER_VERSION = 10_000;

export async function litestreamRestore(b: Bench): Promise<void> {
  const keys = b.q(100_000, 1_000_000);
  const dir = b.dir("restore");
  const data = join(dir, "data");
  b.log(`restore: growing a store to ${int(keys)} keys, then replicating it`);
  const t = Tree.open(data);
  for (let v = 1; v <= keys / PER_VERSION; v++) {
    applyToTree(t, grown(v, PER_VERSION));
    t.commit();
  }
  const [version, hash] = [t.version, toHex(t.hash)];
  t.close();
  const file = join(data, "iavl.sqlite");
  const bytes = statSync(file).size;
  const ls = await startLitestream(dir, data);
  await ls.stop();

  const copyStart = process.hrtime.bigint();
  copyFileSync(file, join(dir, "copy.sqlite"));
  const copyS = Number(process.hrtime.bigint() - copyStart) / 1e9;
  const out = join(dir, "restored");
  const r = await restoreReplicas(pathToFileURL(join(dir, "replica")).href, out, []);
  const back = Tree.openReadOnly(out);
  const same = back.version === version && toHex(back.hash) === hash;
  back.close();
  if (!same) throw new Error("bench: the restored store is not the one replicated");
  b.row(`restore of a ${int(keys)}-key store (${mib(bytes).toFixed(0)} MiB) from a file:// replica, litestream restore of every file`,
    bytes / r.seconds / 2 ** 20, "MiB/s", floorOf("a plain copy of the same database file (page cache warm)", bytes / copyS / 2 ** 20), {
      target: 1 / 0.8,
      note: `${r.seconds.toFixed(2)} s against ${copyS.toFixed(2)} s; the restored store opens at version ${version} with its root hash`,
    });
}
