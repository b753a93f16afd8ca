import { describe, expect, it } from "vitest";
import { latin1, toHex, utf8 } from "../src/base/bytes.js";
import { IavlError } from "../src/base/errors.js";
import { NodeTable } from "../src/tree/node.js";
import { decodePage, pageHash, pageKey, PageWriter, subtreeStart } from "../src/sqlite/page-codec.js";
import { encodePage, leafKeySeq, numberPage, pageNodes } from "../src/sqlite/node-rows.js";
import { isPageSeq, pageOfSeq, pageSeq, slotOfSeq } from "../src/sqlite/shards.js";

const hash = (b: number): Uint8Array => new Uint8Array(32).fill(b);

/** Leaves a, b, c under (a (b c)): post-order a, b, c, [b c], root. */
function small(): Uint8Array {
  const w = new PageWriter();
  w.leaf(1, hash(1), utf8("a"), 7);
  w.leaf(2, hash(2), utf8("b"), 8);
  w.leaf(3, hash(3), utf8("c"), 300);
  w.branch(1, 2, 3, hash(4));
  w.branch(2, 3, 3, hash(5));
  return w.finish();
}

function corrupt(f: () => unknown): void {
  expect(f).toThrow(IavlError);
  try {
    f();
  } catch (e) {
    expect((e as IavlError).code).toBe("CORRUPT");
  }
}

describe("page rows", () => {
  it("encodes a small subtree byte for byte as documented", () => {
    const b = small();
    const leaf = (version: number, h: number, key: string, id: number[]): string =>
      "00" + "01" + toHex(Uint8Array.of(version)) + toHex(hash(h)) + "01" + toHex(utf8(key)) + toHex(Uint8Array.from(id));
    const branch = (height: number, size: number, version: number, h: number, l: number, r: number): string =>
      toHex(Uint8Array.of(height, size, version)) + toHex(hash(h)) + toHex(Uint8Array.of(l, r));
    // 300 as a uvarint is ac 02.
    const expected = "0105" + leaf(1, 1, "a", [7]) + leaf(2, 2, "b", [8]) + leaf(3, 3, "c", [0xac, 0x02]) + branch(1, 2, 3, 4, 1, 2) + branch(2, 3, 3, 5, 0, 3);
    expect(toHex(b)).toBe(expected);
  });

  it("starts a new row after each finish, a failed one too, and takes keys as strings and hashes at an offset", () => {
    const w = new PageWriter();
    w.leaf(8, hash(8), utf8("y"), 1);
    w.leaf(9, hash(9), utf8("z"), 2);
    expect(() => w.finish()).toThrow(IavlError); // two subtrees, no root: refused, and dropped
    w.leaf(1, hash(1), "a", 7);
    w.leaf(2, hash(2), utf8("b"), 8);
    const area = Uint8Array.of(0xee, ...hash(3), 0xee);
    w.leaf(3, area, "c", 300, 1);
    w.branch(1, 2, 3, hash(4));
    w.branch(2, 3, 3, hash(5));
    const first = w.finish();
    expect(first).toEqual(small());
    w.leaf(4, hash(4), "d", 1);
    expect(toHex(w.finish())).toBe("0101" + "000104" + toHex(hash(4)) + "01" + toHex(utf8("d")) + "01");
    expect(first).toEqual(small()); // a row handed out is its own copy
  });

  it("decodes what it encodes", () => {
    const p = decodePage(small(), "page 1");
    expect(p.count).toBe(5);
    expect(Array.from(p.height)).toEqual([0, 0, 0, 1, 2]);
    expect(Array.from(p.size)).toEqual([1, 1, 1, 2, 3]);
    expect(Array.from(p.version)).toEqual([1, 2, 3, 3, 3]);
    expect(Array.from(p.leafId)).toEqual([7, 8, 300, -1, -1]);
    expect(Array.from(p.left)).toEqual([-1, -1, -1, 1, 0]);
    expect(Array.from(p.right)).toEqual([-1, -1, -1, 2, 3]);
    expect(latin1(pageKey(p, 2))).toBe("c");
    expect(pageHash(p, 4)).toEqual(hash(5));
    expect(subtreeStart(p, 3)).toBe(1);
    expect(subtreeStart(p, 4)).toBe(0);
  });

  it("round-trips a subtree through a node table, renumbering its branches to their slots", () => {
    const t = new NodeTable({ stored: true });
    const p = decodePage(small(), "page 9");
    const root = pageNodes(t, 9, p, 4);
    expect(t.size(root)).toBe(3);
    expect(t.key(root)).toBe("b"); // the leftmost key of its right subtree
    expect(t.key(t.right(root))).toBe("c");
    expect(t.seq(root)).toBe(pageSeq(9, 0));
    expect(t.seq(t.right(root))).toBe(pageSeq(9, 1));
    expect(t.seq(t.left(root))).toBe(leafKeySeq(7));
    expect(isPageSeq(t.seq(root)) && pageOfSeq(t.seq(root)) === 9 && slotOfSeq(t.seq(t.right(root))) === 1).toBe(true);
    const moved: number[] = [];
    const length = numberPage(t, root, 12, false, (_n, old) => moved.push(old));
    const again = encodePage(t, root);
    expect(again).toEqual(small());
    expect(length).toBe(again.length);
    expect(numberPage(t, root, 12, true, () => {})).toEqual(again);
    expect(moved).toEqual([pageSeq(9, 1), pageSeq(9, 0)]);
    expect(t.seq(root)).toBe(pageSeq(12, 0));
    // A subtree of the page alone: the branch over b and c.
    const sub = pageNodes(t, 9, p, 3);
    expect(t.size(sub)).toBe(2);
    expect(t.seq(sub)).toBe(pageSeq(9, 1));
  });

  it("refuses malformed rows with CORRUPT", () => {
    const good = small();
    const edit = (at: number, v: number): Uint8Array => {
      const b = good.slice();
      b[at] = v;
      return b;
    };
    corrupt(() => decodePage(edit(0, 2), "page 1")); // format
    corrupt(() => decodePage(edit(1, 4), "page 1")); // count: not one subtree
    corrupt(() => decodePage(good.subarray(0, good.length - 1), "page 1")); // cut short
    corrupt(() => decodePage(Uint8Array.of(...good, 0), "page 1")); // trailing byte
    corrupt(() => decodePage(edit(good.length - 2, 1), "page 1")); // root's left index
    corrupt(() => decodePage(edit(good.length - 37, 3), "page 1")); // root's height
    corrupt(() => decodePage(edit(good.length - 36, 9), "page 1")); // root's size
    corrupt(() => decodePage(edit(good.length - 35, 2), "page 1")); // root older than its children
    const disorder = new PageWriter();
    disorder.leaf(1, hash(1), utf8("b"), 1);
    disorder.leaf(1, hash(1), utf8("a"), 2);
    disorder.branch(1, 2, 1, hash(3));
    corrupt(() => decodePage(disorder.finish(), "page 1")); // leaves out of key order
    const half = new PageWriter();
    half.leaf(1, hash(1), utf8("a"), 1);
    half.leaf(1, hash(1), utf8("b"), 2);
    corrupt(() => half.finish()); // two subtrees, no root
  });
});
