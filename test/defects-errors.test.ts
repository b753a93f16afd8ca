/**
 * Bad input from a caller to any public export gives an IavlError with a code, never a TypeError (or RangeError)
 * from deep inside, and never a silent wrong answer.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  buildTree,
  buildTreeAsync,
  commitInfoHash,
  decodeItems,
  decodeSnapshotItems,
  encodeItems,
  encodeSnapshotItems,
  fromHex,
  IavlError,
  MultiTree,
  toHex,
  Tree,
  type ErrorCode,
  type ExportNode,
} from "../src/index.js";
import { tempDir } from "./backends.js";
import { b } from "./helpers.js";

/** A value of the wrong type, as a JavaScript caller could pass it. */
const bad = <T,>(x: unknown): T => x as T;

/**
 * Runs `fn` and returns what it threw: synchronously, as a rejected promise, or while its result (an iterator or
 * async iterator, which reports bad input on the first step at the latest) is consumed. Undefined when nothing threw.
 */
async function thrownBy(fn: () => unknown): Promise<unknown> {
  try {
    let r = fn();
    if (r instanceof Promise) r = await r;
    if (r !== null && typeof r === "object") {
      if (Symbol.asyncIterator in r) for await (const _ of r as AsyncIterable<unknown>) void _;
      else if (Symbol.iterator in r && !(r instanceof Uint8Array) && !(r instanceof Map)) for (const _ of r as Iterable<unknown>) void _;
    }
    return undefined;
  } catch (e) {
    return e;
  }
}

/** A description of `e` for a failing assertion. */
function shown(e: unknown): string {
  if (e === undefined) return "nothing was thrown";
  if (e instanceof IavlError) return `IavlError ${e.code}: ${e.message}`;
  return `${(e as Error)?.name ?? typeof e}: ${(e as Error)?.message ?? String(e)}`;
}

async function expectIavl(fn: () => unknown, codes: ErrorCode[]): Promise<void> {
  const e = await thrownBy(fn);
  expect(e instanceof IavlError && codes.includes(e.code), `expected IavlError ${codes.join(" or ")}, got ${shown(e)}`).toBe(true);
}

const ARG: ErrorCode[] = ["INVALID_ARGUMENT"];
const OPTS: ErrorCode[] = ["INVALID_ARGUMENT", "INVALID_OPTIONS"];
const STREAM: ErrorCode[] = ["INVALID_ARGUMENT", "INVALID_SNAPSHOT"];

/** A store with two versions (`a` changed in each), closed. */
function twoVersionStore(): string {
  const dir = tempDir();
  const t = Tree.open(dir);
  t.set(b("a"), b("1"));
  t.commit();
  t.set(b("a"), b("2"));
  t.commit();
  t.close();
  return dir;
}

describe("fromHex refuses what is not hex with INVALID_ARGUMENT", () => {
  it.each<[string, string]>([
    ["odd length", "abc"],
    ["a non-hex digit", "zz"],
    ["a 0x prefix", "0x00"],
    ["a space", "00 11"],
  ])("%s", async (_what, input) => {
    await expectIavl(() => fromHex(input), ARG);
  });

  it.each<[string, unknown]>([
    ["a number", 12],
    ["null", null],
    ["undefined", undefined],
    ["bytes", new Uint8Array([1, 2])],
  ])("not a string: %s", async (_what, input) => {
    await expectIavl(() => fromHex(bad<string>(input)), ARG);
  });

  it("still decodes valid hex (both cases) and the empty string (already passes: a guard)", () => {
    expect(fromHex("00fFaA")).toEqual(new Uint8Array([0, 255, 170]));
    expect(fromHex("")).toEqual(new Uint8Array(0));
  });
});

describe("other public functions refuse bad arguments with IavlError", () => {
  const mem = (): Tree => {
    const t = Tree.memory();
    t.set(b("a"), b("1"));
    t.commit();
    return t;
  };

  it.each<[string, () => unknown, ErrorCode[]]>([
    ["toHex(a string)", () => toHex(bad<Uint8Array>("ab")), ARG],
    ["toHex(null)", () => toHex(bad<Uint8Array>(null)), ARG],
    ["toHex(a number)", () => toHex(bad<Uint8Array>(5)), ARG],

    ["encodeItems(a number)", () => encodeItems(bad<Iterable<ExportNode>>(42)), ARG],
    ["encodeItems(null)", () => encodeItems(bad<Iterable<ExportNode>>(null)), ARG],
    ["encodeItems([null])", () => encodeItems(bad<Iterable<ExportNode>>([null])), ARG],
    ["encodeItems([{}])", () => encodeItems(bad<Iterable<ExportNode>>([{}])), ARG],
    ["encodeItems([a node whose key is a string])", () => encodeItems(bad<Iterable<ExportNode>>([{ key: "k", value: new Uint8Array(1), version: 1, height: 0 }])), ARG],
    ["decodeItems(a number)", () => decodeItems(bad<Iterable<Uint8Array>>(42)), ARG],
    ["decodeItems(null)", () => decodeItems(bad<Iterable<Uint8Array>>(null)), ARG],
    ["encodeSnapshotItems(a number)", () => encodeSnapshotItems(bad<Iterable<{ name: string; nodes: Iterable<ExportNode> }>>(42)), ARG],
    ["encodeSnapshotItems([null])", () => encodeSnapshotItems(bad<Iterable<{ name: string; nodes: Iterable<ExportNode> }>>([null])), ARG],
    ["encodeSnapshotItems([a store whose name is a number])", () => encodeSnapshotItems(bad<Iterable<{ name: string; nodes: Iterable<ExportNode> }>>([{ name: 1, nodes: [] }])), ARG],
    ["encodeSnapshotItems([a store without nodes])", () => encodeSnapshotItems(bad<Iterable<{ name: string; nodes: Iterable<ExportNode> }>>([{ name: "a" }])), ARG],
    ["decodeSnapshotItems(a number)", () => decodeSnapshotItems(bad<Iterable<Uint8Array>>(42)), ARG],

    ["commitInfoHash(null)", () => commitInfoHash(bad<Map<string, Uint8Array>>(null)), ARG],
    ["commitInfoHash(a plain object)", () => commitInfoHash(bad<Map<string, Uint8Array>>({ a: new Uint8Array(32) })), ARG],
    ["commitInfoHash(a hash that is a string)", () => commitInfoHash(new Map([["a", bad<Uint8Array>("xx")]])), ARG],
    ["commitInfoHash(a hash that is undefined)", () => commitInfoHash(new Map([["a", bad<Uint8Array>(undefined)]])), ARG],
    ["commitInfoHash(names that are numbers)", () => commitInfoHash(bad<Map<string, Uint8Array>>(new Map([[1, new Uint8Array(32)], [2, new Uint8Array(32)]]))), ARG],

    ["buildTree(a number)", () => buildTree(bad<Iterable<ExportNode>>(42), { version: 1 }), STREAM],
    ["buildTree(null)", () => buildTree(bad<Iterable<ExportNode>>(null), { version: 1 }), STREAM],
    ["buildTreeAsync(a number)", () => buildTreeAsync(bad<Iterable<ExportNode>>(42), { version: 1 }), STREAM],

    ["Tree.rollback(a number, 1)", () => Tree.rollback(bad<string>(5), 1), ARG],
    ["Tree.rollback(null, 1)", () => Tree.rollback(bad<string>(null), 1), ARG],
    ["Tree.import(dir, a number)", () => Tree.import(join(tempDir(), "x"), bad<Iterable<ExportNode>>(42), { version: 1 }), STREAM],
    ["Tree.import(dir, null)", () => Tree.import(join(tempDir(), "x"), bad<Iterable<ExportNode>>(null), { version: 1 }), STREAM],
    ["MultiTree.open(a number)", () => MultiTree.open(bad<string>(5), { stores: ["a"] }), ARG],

    ["Tree.memory().iterate(null)", () => mem().iterate(bad<undefined>(null)), OPTS],
    ["Tree.memory().at(1).iterate(null)", () => mem().at(1).iterate(bad<undefined>(null)), OPTS],
    ["Tree.memory().prune(1, null)", () => mem().prune(1, bad<undefined>(null)), OPTS],
  ])("%s", async (_what, fn, codes) => {
    await expectIavl(fn, codes);
  });

  it("a store's iterate(null), at(v).iterate(null), prune(v, null) and prune with a non-function onProgress", async () => {
    const dir = twoVersionStore();
    const t = Tree.open(dir);
    await expectIavl(() => t.iterate(bad<undefined>(null)), OPTS);
    await expectIavl(() => t.at(1).iterate(bad<undefined>(null)), OPTS);
    await expectIavl(() => t.prune(1, bad<undefined>(null)), OPTS);
    await expectIavl(() => t.prune(1, bad<{ onProgress: () => void }>({ onProgress: 5 })), OPTS);
    // Nothing was pruned by the refused calls.
    expect(t.versions()).toEqual([1, 2]);
    t.close();
  });

  it("a read-only handle's iterate(null)", async () => {
    const r = Tree.openReadOnly(twoVersionStore());
    await expectIavl(() => r.iterate(bad<undefined>(null)), OPTS);
    await expectIavl(() => r.at(1).iterate(bad<undefined>(null)), OPTS);
    r.close();
  });

  it("MultiTree.appHashAt(an object)", async () => {
    const m = MultiTree.open(tempDir(), { stores: ["a"] });
    m.commit();
    await expectIavl(() => m.appHashAt(bad<number>({})), ARG);
    m.close();
  });
});
