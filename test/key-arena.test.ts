import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { latin1Bytes } from "../src/base/bytes.js";
import { KeyArena } from "../src/tree/key-arena.js";
import { NodeTable } from "../src/tree/node-table.js";

describe("KeyArena", () => {
  for (const fixed of [false, true]) {
    it(`reuses a freed room for the next key of its length, and keeps bytes across growths (${fixed ? "by a copy" : "in place"})`, () => {
      const a = new KeyArena(fixed);
      const rooms: Array<[number, number, number]> = []; // offset, length, fill
      for (let k = 0; k < 3_000; k++) {
        const len = 20 + (k % 7);
        const at = a.alloc(len);
        a.bytes.fill(k & 0xff, at, at + len);
        rooms.push([at, len, k & 0xff]);
      }
      const extent = a.extent;
      for (const [at, len, fill] of rooms) expect(a.bytes.subarray(at, at + len).every((b) => b === fill)).toBe(true);
      // Free every other room and make as many keys of the same lengths: they land in the freed rooms.
      const freed = rooms.filter((_, k) => k % 2 === 0);
      for (const [at, len] of freed) a.release(at, len);
      const again = freed.map(([, len]) => a.alloc(len)).sort((x, y) => x - y);
      expect(again).toEqual(freed.map(([at]) => at).sort((x, y) => x - y));
      expect(a.extent).toBe(extent);
      // A length never freed takes new room, after the four bytes of its count.
      expect(a.alloc(99)).toBe(extent + 4);
      expect(a.alloc(0)).toBe(0);
    });
  }

  it("frees a shared room only when its last holder lets go", () => {
    const a = new KeyArena();
    const at = a.alloc(30);
    a.bytes.fill(7, at, at + 30);
    a.share(at, 30);
    a.share(at, 30);
    expect(a.count(at)).toBe(3);
    a.release(at, 30);
    a.release(at, 30);
    // Still held once: a new key of its length takes other room, and the shared bytes stay.
    const other = a.alloc(30);
    expect(other).not.toBe(at);
    a.bytes.fill(9, other, other + 30);
    expect(a.bytes.subarray(at, at + 30).every((b) => b === 7)).toBe(true);
    a.release(at, 30);
    expect(a.alloc(30)).toBe(at);
    // Counts past one byte are kept whole.
    for (let k = 0; k < 300; k++) a.share(other, 30);
    expect(a.count(other)).toBe(301);
  });
});

describe("NodeTable keys", () => {
  it("orders a key against a node's as the bytes order (compareKey), and gives the bytes back", () => {
    // Past 16 bytes a key is written and read by Buffer's native latin1 calls, on a view of a resizable buffer.
    const bytes = fc.oneof(fc.uint8Array({ maxLength: 8 }), fc.uint8Array({ minLength: 17, maxLength: 60 }));
    fc.assert(
      fc.property(bytes, bytes, (a, b) => {
        const t = new NodeTable({ stored: true });
        const n = t.storedLeaf(b, 0, b.length, 1);
        const s = String.fromCharCode(...a);
        expect(t.compareKey(s, t.leaf(s, undefined, 1))).toBe(0);
        const want = Buffer.compare(Buffer.from(a), Buffer.from(b));
        expect(Math.sign(t.compareKey(s, n))).toBe(want);
        expect(t.keyBytes(n)).toEqual(b);
        expect(t.key(n)).toBe(String.fromCharCode(...b));
      }),
      { numRuns: 500 },
    );
  });

  it("keeps a copy's and an owned key whole when the original and its leaf are freed", () => {
    const t = new NodeTable({ stored: true, capacity: 16 });
    const leaf = t.leaf("leaf-key", undefined, 1);
    const named = t.branch(leaf, 1, 1, 2);
    const keyed = t.keyedBranch(latin1Bytes("branch-key"), 1, 1, 2);
    const copy = t.copy(keyed, 2);
    t.ownKey(named);
    t.retire(leaf);
    t.retire(keyed);
    // Rooms freed by the leaf and the original go to new keys of their lengths; the survivors keep theirs.
    t.leaf("LEAF-KEY", undefined, 3);
    t.leaf("BRANCH-KEY", undefined, 3);
    expect(t.key(named)).toBe("leaf-key");
    expect(t.key(copy)).toBe("branch-key");
    // Copies of copies share the room; once every holder is gone, a new key of its length takes it.
    const copies = [t.copy(copy, 3), t.copy(copy, 4)];
    const copyOfCopy = t.copy(copies[0]!, 5);
    const room = t.keyAt(copyOfCopy);
    expect([copy, ...copies].map((n) => t.keyAt(n))).toEqual([room, room, room]);
    for (const n of [copy, ...copies]) t.retire(n);
    expect(t.key(copyOfCopy)).toBe("branch-key");
    t.retire(copyOfCopy);
    expect(t.keyAt(t.leaf("branch-KEY", undefined, 6))).toBe(room);
    expect(t.key(named)).toBe("leaf-key");
  });
});
