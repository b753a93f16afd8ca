import { describe, expect, it } from "vitest";
import { IavlError } from "../src/index.js";
import { Importer } from "../src/tree/importer.js";
import type { ExportNode } from "../src/tree/export-node.js";
import { decodeItems, DEFAULT_MAX_ITEM_BYTES, encodeItems } from "../src/sync/wire.js";
import { concatBytes, equalBytes, toHex, uvarint } from "../src/base/bytes.js";
import { digestBytes, EMPTY_HASH } from "../src/base/hash.js";
import { cpuMs, rng } from "./helpers.js";
import { MutatorTree } from "./mutator-tree.js";

const rand = rng(20240607);
const int = (n: number): number => Math.floor(rand() * n);
const bytes = (n: number): Uint8Array => Uint8Array.from({ length: n }, () => int(256));

/** A ~200-key tree over four versions of creates, updates and deletes, with some empty values. */
function baseTree(): { tree: MutatorTree; version: number } {
  const m = new MutatorTree();
  const live = new Map<string, Uint8Array>();
  const value = (): Uint8Array => (rand() < 0.1 ? new Uint8Array(0) : bytes(1 + int(24)));
  const pick = (): Uint8Array => [...live.values()][int(live.size)]!;
  for (const [creates, updates, deletes] of [
    [150, 0, 0],
    [40, 40, 20],
    [30, 20, 10],
    [0, 10, 0],
  ] as const) {
    for (let i = 0; i < creates; i++) {
      let k = bytes(1 + int(12));
      while (live.has(toHex(k))) k = bytes(1 + int(12));
      live.set(toHex(k), k);
      m.set(k, value());
    }
    for (let i = 0; i < updates; i++) m.set(pick(), value());
    for (let i = 0; i < deletes; i++) {
      const k = pick();
      live.delete(toHex(k));
      m.remove(k);
    }
    m.commit();
  }
  return { tree: m, version: m.m.version - 1 };
}

const { tree, version: target } = baseTree();
const original: ExportNode[] = tree.export();
const originalHash = toHex(tree.hash());
const wireItems: Uint8Array[] = [...encodeItems(original)];

const wire = concatBytes(...wireItems);

function* chunked(data: Uint8Array): Generator<Uint8Array> {
  for (let p = 0; p < data.length; ) {
    const n = 1 + int(rand() < 0.5 ? 8 : 300);
    yield data.slice(p, p + n);
    p += n;
  }
}

type Outcome =
  | { kind: "refused"; message: string }
  | { kind: "accepted"; hash: string; nodes: ExportNode[] }
  | { kind: "wrong-error"; error: unknown };

function judge(e: unknown): Outcome {
  return e instanceof IavlError && e.code === "INVALID_SNAPSHOT"
    ? { kind: "refused", message: e.message }
    : { kind: "wrong-error", error: e };
}

function importNodes(nodes: ExportNode[]): Outcome {
  try {
    const imp = new Importer({ version: target });
    for (const n of nodes) imp.add(n);
    const r = imp.finish();
    return { kind: "accepted", hash: toHex(r === undefined ? EMPTY_HASH : digestBytes(r.hash!)), nodes };
  } catch (e) {
    return judge(e);
  }
}

async function importWire(data: Uint8Array): Promise<Outcome> {
  const seen: ExportNode[] = [];
  try {
    const imp = new Importer({ version: target });
    for await (const n of decodeItems(chunked(data))) {
      seen.push(n);
      imp.add(n);
    }
    const r = imp.finish();
    return { kind: "accepted", hash: toHex(r === undefined ? EMPTY_HASH : digestBytes(r.hash!)), nodes: seen };
  } catch (e) {
    return judge(e);
  }
}

function sameNodes(a: ExportNode[], b: ExportNode[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (!equalBytes(x.key, y.key) || x.version !== y.version || x.height !== y.height) return false;
    if ((x.value === undefined) !== (y.value === undefined)) return false;
    if (x.value !== undefined && !equalBytes(x.value, y.value!)) return false;
  }
  return true;
}

const clone = (n: ExportNode): ExportNode => ({ ...n });
const flipByte = (a: Uint8Array): Uint8Array => {
  const c = new Uint8Array(a);
  c[int(c.length)]! ^= 1 + int(255);
  return c;
};
const indexWhere = (pred: (n: ExportNode) => boolean): number => {
  for (;;) {
    const i = int(original.length);
    if (pred(original[i]!)) return i;
  }
};

/** Damage to the node stream; each returns a new damaged list. */
const nodeDamage: Record<string, () => ExportNode[]> = {
  "flip a leaf key byte": () => {
    const ns = original.map(clone);
    const i = indexWhere((n) => n.height === 0);
    ns[i]!.key = flipByte(ns[i]!.key);
    return ns;
  },
  "flip an inner key byte": () => {
    const ns = original.map(clone);
    const i = indexWhere((n) => n.height > 0);
    ns[i]!.key = flipByte(ns[i]!.key);
    return ns;
  },
  "flip a value byte": () => {
    const ns = original.map(clone);
    const i = indexWhere((n) => n.height === 0);
    const v = ns[i]!.value!;
    ns[i]!.value = v.length === 0 ? new Uint8Array([int(256)]) : flipByte(v);
    return ns;
  },
  "flip a version bit": () => {
    const ns = original.map(clone);
    ns[int(ns.length)]!.version ^= 1 << int(8);
    return ns;
  },
  "flip a height bit": () => {
    const ns = original.map(clone);
    ns[int(ns.length)]!.height ^= 1 << int(4);
    return ns;
  },
  "change a height by one": () => {
    const ns = original.map(clone);
    const n = ns[int(ns.length)]!;
    n.height += n.height === 0 || rand() < 0.5 ? 1 : -1;
    return ns;
  },
  "version beyond the target": () => {
    const ns = original.map(clone);
    ns[int(ns.length)]!.version = target + 1 + int(1000);
    return ns;
  },
  "drop an item": () => {
    const ns = original.slice();
    ns.splice(int(ns.length), 1);
    return ns;
  },
  "duplicate an item": () => {
    const ns = original.slice();
    const i = int(ns.length);
    ns.splice(i + 1, 0, clone(ns[i]!));
    return ns;
  },
  "swap two adjacent items": () => {
    const ns = original.slice();
    const i = int(ns.length - 1);
    [ns[i], ns[i + 1]] = [ns[i + 1]!, ns[i]!];
    return ns;
  },
  "value on an inner node": () => {
    const ns = original.map(clone);
    ns[indexWhere((n) => n.height > 0)]!.value = bytes(int(4));
    return ns;
  },
  "leaf without a value": () => {
    const ns = original.map(clone);
    delete ns[indexWhere((n) => n.height === 0)]!.value;
    return ns;
  },
};

/** Damage to the wire bytes. */
const wireDamage: Record<string, () => Uint8Array> = {
  "truncate at a random byte": () => wire.slice(0, int(wire.length)),
  "append trailing garbage": () => concatBytes(wire, bytes(1 + int(24))),
  "oversized length prefix": () => {
    const items = wireItems.slice();
    const i = int(items.length);
    const body = items[i]!.subarray(1); // every item here is < 128 bytes: a one-byte prefix
    items[i] = concatBytes(uvarint(DEFAULT_MAX_ITEM_BYTES + 1 + int(2 ** 40)), body);
    return concatBytes(...items);
  },
  "flip a wire byte": () => flipByte(wire),
  "insert a wire byte": () => {
    const p = int(wire.length + 1);
    return concatBytes(wire.subarray(0, p), bytes(1), wire.subarray(p));
  },
  "delete a wire byte": () => {
    const p = int(wire.length);
    return concatBytes(wire.subarray(0, p), wire.subarray(p + 1));
  },
  "node damage sent over the wire": () => {
    const kinds = Object.keys(nodeDamage);
    lastNodeDamage = kinds[int(kinds.length)]!;
    return concatBytes(...encodeItems(nodeDamage[lastNodeDamage]!()));
  },
};
/** Which node damage "node damage sent over the wire" applied last. */
let lastNodeDamage = "";

/** Kinds that can never leave a valid tree, so every case must be refused. */
const alwaysRefused = new Set([
  "flip an inner key byte",
  "version beyond the target",
  "duplicate an item",
  "value on an inner node",
  "leaf without a value",
  "oversized length prefix",
]);

const CASES_PER_KIND = 160;

describe("importing damaged snapshot streams", () => {
  it("the undamaged stream imports (directly and over the wire) with the original hash", async () => {
    expect(original.length).toBeGreaterThan(350);
    const direct = importNodes(original);
    expect(direct.kind === "accepted" && direct.hash).toBe(originalHash);
    const viaWire = await importWire(wire);
    expect(viaWire.kind === "accepted" && viaWire.hash).toBe(originalHash);
  });

  it(`refuses with INVALID_SNAPSHOT or changes the root hash, for ${CASES_PER_KIND} cases of each damage`, async () => {
    const violations: string[] = [];
    const summary: Record<string, { refused: number; changed: number; benign: number }> = {};
    let slowest = 0;
    const times: Record<string, number> = {};
    const record = (kind: string, i: number, out: Outcome, ms: number): void => {
      slowest = Math.max(slowest, ms);
      times[kind] = Math.round((times[kind] ?? 0) + ms);
      const s = (summary[kind] ??= { refused: 0, changed: 0, benign: 0 });
      if (out.kind === "wrong-error") {
        violations.push(`${kind} #${i}: threw ${String(out.error)}`);
      } else if (out.kind === "refused") {
        s.refused++;
        if (kind === "oversized length prefix" && !/exceeds the limit/.test(out.message)) {
          violations.push(`${kind} #${i}: refused for another reason: ${out.message}`);
        }
      } else if (out.hash !== originalHash) {
        s.changed++;
        if (alwaysRefused.has(kind)) violations.push(`${kind} #${i}: accepted with another hash`);
      } else if (sameNodes(out.nodes, original)) {
        // The damage did not change what the stream says. Only an empty value dropped from a leaf or added to an
        // inner node may do that: the wire cannot tell empty bytes from absent ones (protobuf omits them).
        s.benign++;
        const emptyValue = lastNodeDamage === "leaf without a value" || lastNodeDamage === "value on an inner node";
        if (!(kind === "node damage sent over the wire" && emptyValue)) {
          violations.push(`${kind} #${i} (${lastNodeDamage}): the damage left the stream's meaning unchanged`);
        }
      } else {
        violations.push(`${kind} #${i}: accepted a different stream with the original root hash`);
      }
    };

    for (const [kind, damage] of Object.entries(nodeDamage)) {
      for (let i = 0; i < CASES_PER_KIND; i++) {
        const t = cpuMs();
        const out = importNodes(damage());
        record(kind, i, out, cpuMs() - t);
      }
    }
    for (const [kind, damage] of Object.entries(wireDamage)) {
      for (let i = 0; i < CASES_PER_KIND; i++) {
        const t = cpuMs();
        const out = await importWire(damage());
        record(kind, i, out, cpuMs() - t);
      }
    }

    if (process.env.FUZZ_SUMMARY) console.log(JSON.stringify(summary, null, 1), times, original.length, wire.length);
    expect(violations.slice(0, 20)).toEqual([]);
    const kinds = Object.keys(nodeDamage).length + Object.keys(wireDamage).length;
    expect(Object.values(summary).reduce((n, s) => n + s.refused + s.changed + s.benign, 0)).toBe(kinds * CASES_PER_KIND);
    for (const [kind, s] of Object.entries(summary)) {
      // Every kind of damage is caught at least most of the time; a few (a value byte) only ever change the hash.
      if (kind !== "flip a value byte") expect(s.refused, kind).toBeGreaterThan(0);
    }
    expect(summary["flip a value byte"]!.changed).toBe(CASES_PER_KIND);
    // No damage makes an import slow (CPU time, so that a busy machine's other processes do not count).
    expect(slowest).toBeLessThan(1000);
  });
});
