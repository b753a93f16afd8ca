import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { tempDir } from "./backends.js";

const repo = fileURLToPath(new URL("..", import.meta.url));
const depcruise = join(repo, "node_modules", ".bin", "depcruise");

/** Runs the project's layer check on the `src` folder of `dir`. */
function layerCheck(dir: string): { status: number | null; out: string } {
  const r = spawnSync(depcruise, ["src", "--config", join(repo, ".dependency-cruiser.cjs")], { cwd: dir, encoding: "utf8" });
  return { status: r.status, out: r.stdout + r.stderr };
}

/** A scratch project with the repository's tsconfig and the given source files. */
function project(files: Record<string, string>): string {
  const dir = tempDir();
  copyFileSync(join(repo, "tsconfig.json"), join(dir, "tsconfig.json"));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((e) => {
    const p = join(dir, e);
    return statSync(p).isDirectory() ? sourceFiles(p) : p.endsWith(".ts") ? [p] : [];
  });
}

describe("the layers of src/", () => {
  it("the layer check refuses an import cycle, an import that climbs a layer, a store read that imports the writer, and SQLite outside src/sqlite", () => {
    // One scratch project holds one offence of each kind (a run of the check costs seconds), and each is named.
    const offences = layerCheck(
      project({
        "src/tree/a.ts": 'import { b } from "./b.js";\nexport const a = (): unknown => b;\n',
        "src/tree/b.ts": 'import { a } from "./a.js";\nexport const b = (): unknown => a;\n',
        "src/tree/up.ts": 'import { c } from "../checkpoint/c.js";\nexport const up = c;\n',
        "src/checkpoint/c.ts": "export const c = 1;\n",
        "src/prune/p.ts": 'import { s } from "../sync/s.js";\nexport const p = s;\n',
        "src/sync/s.ts": "export const s = 1;\n",
        "src/store/read/r.ts": 'import { w } from "../write/w.js";\nexport const r = w;\n',
        "src/store/write/w.ts": "export const w = 1;\n",
      }),
    );
    expect(offences.status).not.toBe(0);
    for (const rule of ["no-circular", "no-climb-from-tree", "no-peer-prune-sync", "store-read-not-write"]) expect(offences.out).toContain(rule);

    const fine = layerCheck(
      project({
        "src/checkpoint/a.ts": 'import { b } from "../tree/b.js";\nexport const a = b;\n',
        "src/tree/b.ts": "export const b = 1;\n",
      }),
    );
    expect(fine.out).toContain("no dependency violations");
    expect(fine.status).toBe(0);
  });

  it("writes SQL only in src/sqlite: no other module prepares, runs or transacts", () => {
    const offenders: string[] = [];
    for (const file of sourceFiles(join(repo, "src"))) {
      const rel = relative(repo, file);
      if (rel.startsWith(join("src", "sqlite"))) continue;
      // The floor of `iavlite bench` is a plain SQLite table on purpose (see .dependency-cruiser.cjs).
      if (rel === join("src", "cli", "bench-floor.ts")) continue;
      const text = readFileSync(file, "utf8");
      for (const m of text.matchAll(/\.(prepare|exec|pragma|transaction)\(/g)) offenders.push(`${rel}: .${m[1]}(`);
      if (/\b(SELECT|INSERT|UPDATE|DELETE)\b[^"`]*\b(FROM|INTO|SET)\b/.test(text)) offenders.push(`${rel}: SQL text`);
    }
    expect(offenders).toEqual([]);
  });
});
