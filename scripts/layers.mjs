// Prints the drawing of src/'s folders, bottom to top, each with the folders it imports, so that `npm run check`
// shows the house as it is. store/read and store/write count as folders of their own. The rules themselves are
// dependency-cruiser's (.dependency-cruiser.cjs); this reads import specifiers with a regular expression, which is
// enough for a drawing and costs milliseconds where a second cruise costs seconds.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const src = fileURLToPath(new URL("../src", import.meta.url));

/** Every .ts and .mjs file under `dir`. */
function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return files(p);
    return /\.(ts|mjs)$/.test(e.name) ? [p] : [];
  });
}

/** The folder a path under src/ belongs to: its first folder, or store/read, store/write; the entry is `index.ts`. */
function folderOf(path) {
  const parts = relative(src, path).split(/[\\/]/);
  if (parts.length === 1) return parts[0];
  if (parts[0] === "store" && (parts[1] === "read" || parts[1] === "write") && parts.length > 2) return `store/${parts[1]}`;
  return parts[0];
}

const IMPORT = /(?:^|[\s;])(?:import|export)\s[^"'`]*?from\s*["']([^"']+)["']|(?:^|[\s;(])import\s*\(?\s*["']([^"']+)["']/g;

const imports = new Map();
for (const file of files(src)) {
  const from = folderOf(file);
  const set = imports.get(from) ?? new Set();
  imports.set(from, set);
  for (const m of readFileSync(file, "utf8").matchAll(IMPORT)) {
    const spec = m[1] ?? m[2];
    if (!spec.startsWith(".")) continue;
    const target = resolve(dirname(file), spec);
    if (relative(src, target).startsWith("..")) continue;
    const to = folderOf(target);
    if (to !== from) set.add(to);
  }
}

// A folder's floor is one above the highest floor it imports; a cycle (which the layer check reports) gets none.
const floor = new Map();
const floorOf = (f, seen = new Set()) => {
  if (floor.has(f)) return floor.get(f);
  if (seen.has(f)) return Infinity;
  seen.add(f);
  const below = [...(imports.get(f) ?? [])].map((g) => floorOf(g, seen));
  seen.delete(f);
  const n = below.length === 0 ? 0 : Math.max(...below) + 1;
  floor.set(f, n);
  return n;
};
const folders = [...imports.keys()].sort((a, b) => floorOf(a) - floorOf(b) || a.localeCompare(b));
const width = Math.max(...folders.map((f) => f.length));
const byFloor = (a, b) => floorOf(a) - floorOf(b) || a.localeCompare(b);
console.log("src/ by floor, bottom to top: each folder and the folders it imports");
for (const f of folders) {
  const n = floorOf(f);
  const to = [...imports.get(f)].sort(byFloor).join(" ");
  console.log(`  ${n === Infinity ? "∞" : String(n).padStart(2)}  ${f.padEnd(width)}  ${to === "" ? "—" : `→ ${to}`}`);
}
