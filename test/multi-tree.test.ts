import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { commitInfoHash, EMPTY_HASH, IavlError, MultiTree, toHex, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { b } from "./helpers.js";
import { applyVersion } from "./fixtures/version-ops.js";

const sha = (...parts: Uint8Array[]): Buffer => {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return h.digest();
};
/** A CommitInfo leaf by hand: uvarint(len name) ‖ name ‖ uvarint(32) ‖ sha256(store hash); names here are < 128 bytes. */
const leaf = (name: string, hash: Uint8Array): Buffer => Buffer.concat([Buffer.from([name.length]), Buffer.from(name), Buffer.from([32]), sha(hash)]);
const L = (x: Uint8Array): Buffer => sha(Buffer.from([0]), x);
const I = (l: Uint8Array, r: Uint8Array): Buffer => sha(Buffer.from([1]), l, r);

describe("MultiTree", () => {
  it("commits all stores at one version with the Cosmos SDK CommitInfo app hash", () => {
    const dir = tempDir();
    const m = MultiTree.open(dir, { stores: ["staking", "bank", "acc"] });
    m.tree("bank").set(b("a"), b("1"));
    m.tree("staking").set(b("b"), b("2"));
    const c = m.commit();
    expect(c.version).toBe(1);
    const hb = Tree.memory();
    hb.set(b("a"), b("1"));
    const hs = Tree.memory();
    hs.set(b("b"), b("2"));
    expect(toHex(c.hashes.get("bank")!)).toBe(toHex(hb.commit().hash));
    const empty = sha(new Uint8Array(0));
    // Three stores sorted by name: acc, bank, staking; RFC 6962 splits 3 as 2 + 1.
    const expected = I(I(L(leaf("acc", empty)), L(leaf("bank", c.hashes.get("bank")!))), L(leaf("staking", hs.commit().hash)));
    expect(toHex(c.appHash)).toBe(expected.toString("hex"));
    expect(toHex(m.appHashAt(1))).toBe(expected.toString("hex"));
    // Two stores: one inner node over two leaves.
    const two = new Map([["x", b("h1")], ["y", b("h2")]]);
    expect(toHex(commitInfoHash(two))).toBe(I(L(leaf("x", b("h1"))), L(leaf("y", b("h2")))).toString("hex"));
    m.close();
    const again = MultiTree.open(dir, { stores: ["staking", "bank", "acc"] });
    expect(again.version).toBe(1);
    expect(toHex(again.appHash)).toBe(expected.toString("hex"));
    expect(() => again.tree("nope")).toThrowError(IavlError);
    again.close();
  });

  it("refuses bad options", () => {
    for (const stores of [[], ["a", "a"], ["bad/name"]]) {
      let code: string | undefined;
      try {
        MultiTree.open(tempDir(), { stores });
      } catch (e) {
        code = (e as IavlError).code;
      }
      expect(code).toBe("INVALID_OPTIONS");
    }
  });

  it("after SIGKILL during commits, every store reopens at the same version with its expected hash", async () => {
    const dir = tempDir();
    const child = fileURLToPath(new URL("./fixtures/multi-writer.ts", import.meta.url));
    const STORES = ["bank", "lockup", "staking"];
    const models = STORES.map(() => Tree.memory());
    const hashes: string[][] = STORES.map(() => [toHex(EMPTY_HASH)]);
    const extend = (v: number): void => {
      while (models[0]!.version < v) {
        const next = models[0]!.version + 1;
        models.forEach((t, i) => {
          applyVersion(t, next * 10 + i, 150);
          hashes[i]!.push(toHex(t.commit().hash));
        });
      }
    };
    for (const delay of [20, 60, 120, 200, 300, 450, 600, 800, 150, 90]) {
      const last = await new Promise<number>((resolve, reject) => {
        const p = spawn(process.execPath, ["--import", "tsx", child, dir], { stdio: ["ignore", "pipe", "pipe"] });
        let out = "";
        let err = "";
        let armed = false;
        p.stdout.on("data", (d: Buffer) => {
          out += d.toString();
          if (!armed && out.includes("opened")) {
            armed = true;
            setTimeout(() => p.kill("SIGKILL"), delay);
          }
        });
        p.stderr.on("data", (d: Buffer) => (err += d.toString()));
        p.on("exit", (_c, sig) => {
          if (sig !== "SIGKILL") return reject(new Error(err));
          const m = [...out.matchAll(/committed (\d+)/g)];
          resolve(m.length > 0 ? Number(m[m.length - 1]![1]) : 0);
        });
      });
      const multi = MultiTree.open(dir, { stores: STORES });
      expect(multi.version).toBeGreaterThanOrEqual(last);
      extend(multi.version);
      STORES.forEach((name, i) => {
        const t = multi.tree(name);
        expect(t.version).toBe(multi.version);
        expect(toHex(t.hash)).toBe(hashes[i]![multi.version]);
      });
      multi.close();
    }
    expect(models[0]!.version).toBeGreaterThan(3);
  }, 180_000);
});
