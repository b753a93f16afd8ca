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
    const cycle = layerCheck(
      project({
        "src/tree/a.ts": 'import { b } from "./b.js";\nexport const a = (): unknown => b;\n',
        "src/tree/b.ts": 'import { a } from "./a.js";\nexport const b = (): unknown => a;\n',
      }),
    );
    expect(cycle.status).not.toBe(0);
    expect(cycle.out).toContain("no-circular");

    const climb = layerCheck(
      project({
        "src/tree/a.ts": 'import { b } from "../checkpoint/b.js";\nexport const a = b;\n',
        "src/checkpoint/b.ts": "export const b = 1;\n",
      }),
    );
    expect(climb.status).not.toBe(0);
    expect(climb.out).toContain("no-climb-from-tree");

    const peers = layerCheck(
      project({
        "src/prune/a.ts": 'import { b } from "../sync/b.js";\nexport const a = b;\n',
        "src/sync/b.ts": "export const b = 1;\n",
      }),
    );
    expect(peers.status).not.toBe(0);
    expect(peers.out).toContain("no-peer-prune-sync");

    const readWrite = layerCheck(
      project({
        "src/store/read/a.ts": 'import { b } from "../write/b.js";\nexport const a = b;\n',
        "src/store/write/b.ts": "export const b = 1;\n",
      }),
    );
    expect(readWrite.status).not.toBe(0);
    expect(readWrite.out).toContain("store-read-not-write");

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
