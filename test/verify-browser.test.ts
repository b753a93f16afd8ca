/**
 * `iavlite/verify` must load without Node: the layer check keeps Node builtins, better-sqlite3, other folders of src/
 * and other packages out of src/verify; no file of it names a Node global; and bundled for browsers by esbuild it
 * verifies proofs inside a bare `vm` context, which has no Buffer, process, require, TextEncoder or crypto.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createContext, runInContext } from "node:vm";
import { ics23 } from "@confio/ics23";
import { buildSync } from "esbuild";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { Tree } from "../src/index.js";
import { appProofs } from "./app-proof.js";
import { tempDir } from "./backends.js";
import { b } from "./helpers.js";

const repo = fileURLToPath(new URL("..", import.meta.url));
const verifyDir = join(repo, "src", "verify");
const verifyFiles = readdirSync(verifyDir).filter((f) => f.endsWith(".ts"));

/** Runs the project's layer check on a scratch project holding `files` (and the repository's node_modules). */
function layerCheck(files: Record<string, string>): { status: number | null; out: string } {
  const dir = tempDir();
  copyFileSync(join(repo, "tsconfig.json"), join(dir, "tsconfig.json"));
  symlinkSync(join(repo, "node_modules"), join(dir, "node_modules"));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  const depcruise = join(repo, "node_modules", ".bin", "depcruise");
  const r = spawnSync(depcruise, ["src", "--config", join(repo, ".dependency-cruiser.cjs")], { cwd: dir, encoding: "utf8" });
  return { status: r.status, out: r.stdout + r.stderr };
}

/** What code that runs in browsers must not name: Node's globals and loaders, and Web APIs a bare context lacks. */
const nodeWords = [/node:/, /\bBuffer\b/, /\bprocess\b/, /\brequire\s*\(/, /\bimport\s*\(/, /\bText(En|De)coder\b/, /\bglobalThis\b/, /\bcrypto\b/];

describe("src/verify stands alone", () => {
  it("the layer check refuses a Node builtin, better-sqlite3, another src/ folder or another package in src/verify", () => {
    // One scratch project with one offending module per rule (each check costs a couple of seconds).
    const r = layerCheck({
      "src/verify/crypto.ts": 'import { hash } from "node:crypto";\nexport const a = hash;\n',
      "src/verify/buffer.ts": 'import { Buffer } from "buffer";\nexport const a = Buffer;\n',
      "src/verify/sqlite.ts": 'import Database from "better-sqlite3";\nexport const a = Database;\n',
      "src/verify/climb.ts": 'import { b } from "../base/b.js";\nexport const a = b;\n',
      "src/verify/zod.ts": 'import { z } from "zod";\nexport const a = z;\n',
      "src/base/b.ts": "export const b = 1;\n",
    });
    expect(r.status).not.toBe(0);
    const violations = (from: string): string[] =>
      [...r.out.matchAll(new RegExp(`error (\\S+): src/verify/${from}\\.ts`, "g"))].map((m) => m[1]!).sort();
    expect(violations("crypto")).toEqual(["verify-no-node"]);
    expect(violations("buffer")).toEqual(["verify-no-node"]);
    expect(violations("sqlite")).toEqual(["sqlite-only-in-sqlite", "verify-no-sqlite", "verify-only-noble-hashes"]);
    expect(violations("climb")).toEqual(["verify-stands-alone"]);
    expect(violations("zod")).toEqual(["verify-only-noble-hashes"]);
    const fine = layerCheck({
      "src/verify/a.ts": 'import { sha256 } from "@noble/hashes/sha2.js";\nimport { c } from "./c.js";\nexport const a = [sha256, c];\n',
      "src/verify/c.ts": "export const c = 1;\n",
    });
    expect(fine.out).toContain("no dependency violations");
    expect(fine.status).toBe(0);
  });

  it("no file of src/verify names a Node global or imports anything but its own files and @noble/hashes", () => {
    expect(verifyFiles).toContain("index.ts");
    const offenders: string[] = [];
    for (const file of verifyFiles) {
      const source = readFileSync(join(verifyDir, file), "utf8");
      for (const { fileName } of ts.preProcessFile(source, true, true).importedFiles) {
        if (!fileName.startsWith("./") && !fileName.startsWith("@noble/hashes/")) offenders.push(`${file}: imports ${fileName}`);
      }
      // The code without its comments (which may well mention Buffer, to say it is not used).
      const options = { removeComments: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext };
      const code = ts.transpileModule(source, { compilerOptions: options }).outputText;
      for (const word of nodeWords) {
        if (word.test(code)) offenders.push(`${file}: ${word.source}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it("bundled for browsers, it verifies proofs in a vm context with no Node globals", () => {
    const bundle = buildSync({
      entryPoints: [join(verifyDir, "index.ts")],
      bundle: true,
      format: "iife",
      globalName: "iavliteVerify",
      platform: "browser",
      write: false,
      logLevel: "silent",
    });
    expect(bundle.errors).toEqual([]);
    const code = bundle.outputFiles[0]!.text;
    expect(code).not.toMatch(/\brequire\s*\(|node:/);

    const context = createContext({});
    expect(runInContext("[typeof Buffer, typeof process, typeof require, typeof TextEncoder, typeof crypto].join()", context)).toBe(
      "undefined,undefined,undefined,undefined,undefined",
    );
    runInContext(code, context);

    const tree = Tree.memory();
    for (let i = 0; i < 64; i++) tree.set(b(`key-${i}`), b(`value-${i}`));
    const root = tree.commit().hash;
    const stores = new Map([["bank", root], ["acc", new Uint8Array(32).fill(9)], ["gov", new Uint8Array(32).fill(8)]]);
    const { appHash, proofs } = appProofs(stores);
    // Plain number arrays go in; the bytes are made inside the context, so every array the verifier sees is of its realm.
    const plain = (...xs: Uint8Array[]): number[][] => xs.map((x) => Array.from(x));
    context.cases = {
      member: plain(ics23.CommitmentProof.encode(tree.proof(b("key-42"))).finish(), root, b("key-42"), b("value-42")),
      absent: plain(ics23.CommitmentProof.encode(tree.proof(b("key-42a"))).finish(), root, b("key-42a")),
      app: plain(ics23.CommitmentProof.encode(proofs.get("bank")!).finish(), appHash),
    };
    const results: unknown = runInContext(
      `(() => {
        const u = (a) => Uint8Array.from(a);
        const v = iavliteVerify;
        const [mp, mr, mk, mv] = cases.member.map(u);
        const [np, nr, nk] = cases.absent.map(u);
        const [ap, ah] = cases.app.map(u);
        const bad = Uint8Array.from(mp); bad[bad.length - 1] ^= 1;
        return [
          v.verifyMembership(mp, mr, mk, mv),
          v.verifyNonMembership(np, nr, nk),
          v.verifyStoreInApp(ap, ah, "bank", mr),
          v.verifyMembership(bad, mr, mk, mv),
          v.verifyMembership(mp, mr, mk, Uint8Array.of(1)),
          v.verifyNonMembership(mp, mr, mk),
          v.verifyStoreInApp(ap, ah, "acc", mr),
          v.verifyMembership(new Uint8Array(1000).fill(0x0a), mr, mk, mv),
          v.verifyMembership("not bytes", mr, mk, mv),
        ].join();
      })()`,
      context,
    );
    expect(results).toBe("true,true,true,false,false,false,false,false,false");
  });
});
