/**
 * A version's rows packed for the writer thread (src/sqlite/packed-write.ts) come back as they went: leaves, branches,
 * pages, and what a checkpoint written over several commits adds (the orphans of earlier versions, the version it
 * makes a checkpoint).
 */
import { describe, expect, it } from "vitest";
import { packWrite, unpackWrite } from "../src/sqlite/packed-write.js";
import type { BranchRow, PageWrite, VersionWrite } from "../src/sqlite/rows.js";

const bytes = (...xs: number[]): Uint8Array => Uint8Array.from(xs);
const rows = <T>(items: T[], size: (t: T) => number): Iterable<T> & { count: number; bytes: number } => ({
  count: items.length,
  bytes: items.reduce((n, t) => n + size(t), 0),
  [Symbol.iterator]: () => items[Symbol.iterator](),
});

function write(completes: VersionWrite["completes"], laterOrphans: VersionWrite["laterOrphans"]): VersionWrite {
  const branch: BranchRow = { version: 3, seq: 7, key: bytes(1, 2), height: 2, size: 4, hash: new Uint8Array(32).fill(9), leftVersion: 2, leftSeq: 1, rightVersion: 3, rightSeq: -5, kids: bytes(1, 4, 4) };
  const page: PageWrite = { id: 11, version: 3, bytes: bytes(5, 6, 7) };
  return {
    version: { version: 5, hash: new Uint8Array(32).fill(1), size: 4, checkpoint: false, rootVersion: null, rootSeq: null, ops: 2, firstLeaf: 20, leafRows: 2 },
    leaves: [
      { id: 20, key: bytes(1), hash: new Uint8Array(32).fill(2), value: bytes(3, 4) },
      { id: 21, key: bytes(2), hash: null, value: null },
    ],
    firstLeaf: 20,
    ops: bytes(8, 8),
    branches: rows([branch], (b) => b.key.length + 32 + (b.kids?.length ?? 0)),
    pages: rows([page], (p) => p.bytes.length),
    orphans: bytes(4),
    laterOrphans,
    completes,
  };
}

/** A write as plain data, its row iterables spread. */
const plain = (w: ReturnType<typeof unpackWrite> | VersionWrite): unknown => ({
  ...w,
  leaves: [...w.leaves],
  branches: [...w.branches],
  pages: [...w.pages],
});

describe("a packed write", () => {
  it("round-trips a step that ends an earlier version's checkpoint, with orphans for two earlier versions", () => {
    const w = write({ version: 3, rootVersion: 3, rootSeq: 12 }, [
      [3, bytes(1, 2, 3)],
      [4, bytes(9)],
    ]);
    expect(plain(unpackWrite(packWrite(w)))).toEqual(plain(w));
  });

  it("round-trips a write with neither", () => {
    const w = write(undefined, []);
    expect(plain(unpackWrite(packWrite(w)))).toEqual(plain(w));
  });
});
