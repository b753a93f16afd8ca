/**
 * The simulator's reader in another process: opens the store read-only and, for the given milliseconds, refreshes
 * and prints what it reads, a line per read: `version hash key=value,…` (hex), or `gone CODE` when the version went
 * while it was read. The parent checks each line against the version of that number and hash in any history.
 */
import { isIavlError, toHex, Tree } from "../src/index.js";

const [dir, ms] = process.argv.slice(2) as [string, string];
const reader = Tree.openReadOnly(dir);
const until = Date.now() + Number(ms);
while (Date.now() < until) {
  const v = reader.refresh();
  if (v > 0) {
    try {
      const hash = toHex(reader.hash);
      const pairs = [...reader.iterate()].map(([k, val]) => `${toHex(k)}=${toHex(val)}`);
      process.stdout.write(`${v} ${hash} ${pairs.join(",")}\n`);
    } catch (e) {
      if (!isIavlError(e, "VERSION_PRUNED") && !isIavlError(e, "VERSION_ROLLED_BACK")) throw e;
      process.stdout.write(`gone ${e.code}\n`);
    }
  }
  await new Promise((r) => setTimeout(r, 15));
}
reader.close();
