import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { iavlSpec, verifyMembership } from "@confio/ics23";
import { describe, expect, it } from "vitest";
import { decodeItems, encodeItems, IavlError, toHex, Tree, type ExportNode } from "../src/index.js";
import { tempDir } from "./backends.js";
import { treehashOps } from "./helpers.js";

function treehashStore(dir: string): Tree {
  const t = Tree.open(dir, { checkpointInterval: 3 });
  for (const v of treehashOps()) {
    for (const op of v.ops) op[0] === "s" ? t.set(op[1], op[2]) : t.remove(op[1]);
    t.commit();
  }
  return t;
}

describe("Tree.import into a store", () => {
  it("round-trips export → wire → import with the same hash, size, reads and proofs", async () => {
    const src = treehashStore(tempDir());
    const wire = [...encodeItems(src.at(4).export())];
    const dest = join(tempDir(), "imported");
    const t = await Tree.import(dest, decodeItems(wire), { version: 4, expectedHash: src.hash });
    expect(t.version).toBe(4);
    expect(toHex(t.hash)).toBe(toHex(src.hash));
    expect(t.size).toBe(src.size);
    expect([...t.iterate()].map(([k, v]) => toHex(k) + toHex(v))).toEqual([...src.iterate()].map(([k, v]) => toHex(k) + toHex(v)));
    const [k, v] = t.iterate().next().value as [Uint8Array, Uint8Array];
    expect(verifyMembership(t.proof(k), iavlSpec, t.hash, k, v)).toBe(true);
    // The imported store continues like the original.
    for (const tree of [src, t]) tree.remove(k);
    expect(toHex(t.commit().hash)).toBe(toHex(src.commit().hash));
    t.close();
    const reopened = Tree.open(dest);
    expect(reopened.version).toBe(5);
    expect(toHex(reopened.at(4).hash)).toBe(toHex(src.at(4).hash));
    // A version before the snapshot was never in this store.
    expect(() => reopened.at(3)).toThrowError(IavlError);
    reopened.close();
    src.close();
  });

  it("exports of a store equal exports of a memory tree with the same history", () => {
    const s = treehashStore(tempDir());
    const m = Tree.memory();
    for (const v of treehashOps()) {
      for (const op of v.ops) op[0] === "s" ? m.set(op[1], op[2]) : m.remove(op[1]);
      m.commit();
    }
    for (const v of [2, 4]) {
      const a = [...s.at(v).export()].map((n) => `${toHex(n.key)}:${n.version}:${n.height}:${n.value ? toHex(n.value) : ""}`);
      const b = [...m.at(v).export()].map((n) => `${toHex(n.key)}:${n.version}:${n.height}:${n.value ? toHex(n.value) : ""}`);
      expect(a).toEqual(b);
    }
    s.close();
  });

  it("leaves nothing behind when the stream is refused or the hash does not match", async () => {
    const src = treehashStore(tempDir());
    const nodes = [...src.at(4).export()];
    const parent = tempDir();
    const cases: Array<[string, ExportNode[], Uint8Array | undefined]> = [
      ["truncated", nodes.slice(0, nodes.length - 5), undefined],
      ["reordered", [nodes[1]!, nodes[0]!, ...nodes.slice(2)], undefined],
      ["wrong hash", nodes, new Uint8Array(32)],
    ];
    for (const [name, stream, expectedHash] of cases) {
      const dest = join(parent, name.replace(" ", "-"));
      let err: unknown;
      try {
        await Tree.import(dest, stream, { version: 4, expectedHash });
      } catch (e) {
        err = e;
      }
      expect((err as IavlError).code, name).toBe("INVALID_SNAPSHOT");
      expect(existsSync(dest), name).toBe(false);
    }
    expect(readdirSync(parent)).toEqual([]);
    src.close();
  });
});
