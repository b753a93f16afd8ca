/**
 * State sync: `Tree.import` of the persistent section's grown BANK tree (1M keys, quick: 100k; grown here when that
 * section did not run), its export held in memory so that the export's cost is not in it. The floor is what any
 * importer must do: hash every node bottom-up (node:crypto sha256 over the IAVL preimages, SPEC §1), then insert the
 * rows of the store's design into plain tables of our own in one transaction (per leaf a (key, version) → value row
 * and a (version, seq) → key, hash row, per branch a (version, seq) row with its children), in both layouts.
 * @module
 */
import { hash } from "node:crypto";
import { join } from "node:path";
import { Tree, type ExportNode } from "../src/index.js";
import { fasterPlain, layoutFile, LAYOUTS, layoutSql, perLayout, plainDb } from "./floors.js";
import { grownBank } from "./persistent.js";
import { floorOf, type Bench } from "./report.js";
import { bytesOf, gc, int, mib, timeNs, timeNsAsync } from "./timing.js";

const buf = Buffer.alloc(1 << 16);
/** Go's uvarint at buf[p]; a signed varint of x ≥ 0 is the uvarint of 2x (zig-zag). */
function uvarint(p: number, x: number): number {
  for (; x >= 0x80; x = Math.floor(x / 128)) buf[p++] = (x % 128) | 0x80;
  buf[p] = x;
  return p + 1;
}

/** Each node's hash and size, as an importer recomputes them from the post-order stream. */
function hashAll(stream: readonly ExportNode[]): { hashes: Buffer[]; sizes: number[] } {
  const [hashes, sizes, stack]: [Buffer[], number[], number[]] = [[], [], []];
  stream.forEach((n, i) => {
    let p: number;
    if (n.height === 0) {
      // varint(0) ‖ varint(1) ‖ varint(version) ‖ bytes(key) ‖ bytes(sha256(value))
      p = uvarint(uvarint(uvarint(uvarint(0, 0), 2), 2 * n.version), n.key.length);
      buf.set(n.key, p);
      buf[(p += n.key.length)] = 32;
      buf.set(hash("sha256", n.value!, "buffer"), p + 1);
      sizes.push(1);
    } else {
      // varint(height) ‖ varint(size) ‖ varint(version) ‖ bytes(left hash) ‖ bytes(right hash)
      const [r, l] = [stack.pop()!, stack.pop()!];
      sizes.push(sizes[l]! + sizes[r]!);
      p = uvarint(uvarint(uvarint(0, 2 * n.height), 2 * sizes[i]!), 2 * n.version);
      [buf[p], buf[p + 33]] = [32, 32];
      buf.set(hashes[l]!, p + 1);
      buf.set(hashes[r]!, (p += 33) + 1);
    }
    hashes.push(hash("sha256", buf.subarray(0, p + 33), "buffer"));
    stack.push(i);
  });
  return { hashes, sizes };
}

export async function stateSync(b: Bench): Promise<void> {
  const g = await grownBank(b);
  const src = Tree.open(join(g.dir, "store"));
  const [version, root, size] = [src.version, src.hash, src.size];
  const stream = [...src.at(version).export()];
  src.close();
  const nodes = stream.length;
  gc();
  b.log(`import of ${int(nodes)} nodes`);
  const dir = b.dir("state-sync");
  let t: Tree | undefined;
  const options = { version, expectedHash: root };
  const importNs = await timeNsAsync(async () => (t = await Tree.import(join(dir, "imported"), stream, options)));
  if (Buffer.compare(t!.hash, root) !== 0 || t!.size !== size) throw new Error("bench: the import does not match");
  t!.close();

  gc();
  b.log("floor: hashing and inserting the same nodes");
  let h: ReturnType<typeof hashAll> = { hashes: [], sizes: [] };
  const hashNs = timeNs(() => (h = hashAll(stream)));
  if (Buffer.compare(h.hashes[nodes - 1]!, root) !== 0) throw new Error("bench: the floor's hashes miss the root hash");
  const insertNs = perLayout((l) => timeNs(() => {
    const db = plainDb(layoutFile(dir, "nodes", l));
    db.exec(`CREATE TABLE kv (key BLOB, version INTEGER, value BLOB, PRIMARY KEY (key, version))${layoutSql(l)};
      CREATE TABLE leaf (version INTEGER, seq INTEGER, key BLOB, hash BLOB, PRIMARY KEY (version, seq))${layoutSql(l)};
      CREATE TABLE branch (version INTEGER, seq INTEGER, key BLOB, height INTEGER, size INTEGER, hash BLOB,
        left_version, left_seq, right_version, right_seq, PRIMARY KEY (version, seq))${layoutSql(l)};`);
    const [kv, leaf, branch] = [3, 4, 10].map((n, i) =>
      db.prepare(`INSERT INTO ${["kv", "leaf", "branch"][i]} VALUES (${Array(n).fill("?").join(", ")})`));
    // Node keys as in IAVL v2 (SPEC §5): per version, branches 1, 2, … and leaves 2^31 + 1, ….
    const [next, seqs, stack] = [new Map<number, number>(), [] as number[], [] as number[]];
    db.transaction(() => stream.forEach((n, i) => {
      const k = n.height === 0 ? -n.version : n.version;
      const seq = (next.get(k) ?? (n.height === 0 ? 2 ** 31 : 0)) + 1;
      next.set(k, seq);
      seqs.push(seq);
      if (n.height === 0) kv!.run(n.key, n.version, n.value), leaf!.run(n.version, seq, n.key, h.hashes[i]);
      else {
        const [r, l] = [stack.pop()!, stack.pop()!];
        const [left, right] = [[stream[l]!.version, seqs[l]], [stream[r]!.version, seqs[r]]];
        branch!.run(n.version, seq, n.key, n.height, h.sizes[i], h.hashes[i], ...left, ...right);
      }
      stack.push(i);
    })).immediate();
    db.close();
  }));
  const floorRates = perLayout((l) => nodes / ((hashNs + insertNs[l]) / 1e9));
  const floor = fasterPlain(floorRates, "nodes/s", "hash every node + insert the same rows in 1 tx");
  const files = LAYOUTS.map((l) => `${l} ${int(mib(bytesOf(layoutFile(dir, "nodes", l))))}`).join(", ");
  const note = `import ${(importNs / 1e9).toFixed(1)} s; floor hashing ${(hashNs / 1e9).toFixed(1)} s; imported store ` +
    `${int(mib(bytesOf(join(dir, "imported"))))} MiB, floor files ${files} MiB`;
  const name = `import via Tree.import (${int(nodes)} nodes, stream in memory)`;
  b.row(name, nodes / (importNs / 1e9), "nodes/s", floor, { target: 1.67, note });
  b.row("import time against building the same tree by commits", importNs / 1e9, "s",
    floorOf(`${g.versions} commits of ${int(g.ops)} changes (the initial load excluded)`, g.treeNs / 1e9),
    { note: "context: how much faster a node joins by state sync than by replaying history" });
}
