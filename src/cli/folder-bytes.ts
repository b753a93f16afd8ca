/**
 * What a folder takes on disk, as `du -sb` counts it: the sizes of its files, those of its subfolders included.
 * @module
 */
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

/** The bytes of every file under `dir` (0 for a file that went meanwhile). */
export function folderBytes(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) n += folderBytes(p);
    else {
      try {
        n += statSync(p).size;
      } catch {
        // gone between the listing and the stat: nothing to count
      }
    }
  }
  return n;
}
