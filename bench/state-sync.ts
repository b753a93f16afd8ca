/**
 * State sync: `Tree.import` of the persistent section's grown BANK tree (1M keys, quick: 100k; grown here when that
 * section did not run), its export held in memory so that the export's cost is not in it. The floor is what any
 * importer must do: hash every node bottom-up (node:crypto sha256 over the IAVL preimages, SPEC §1) and insert the
 * same rows as the store's design into plain tables in one transaction (a (key, version) → value row and a
 * (version, seq) → key, hash row per leaf, a (version, seq) row per branch with its children), in both layouts.
 * @module
 */
import { hash } from "node:crypto";
import { join } from "node:path";
import { Tree, type ExportNode } from "../src/index.js";
import { bytesOf, fasterPlain, gc, LAYOUTS, layoutSql, mib, perLayout, plainDb, timed, timeNs, timeNsAsync, type Bench } from "./harness.js";
import { grownBank } from "./persistent.js";

const buf = Buffer.alloc(1 << 16);
/** Go's uvarint at buf[p]; varint(x) for x ≥ 0 is uvarint(2x) (zig-zag). */
function uvarint(p: number, x: number): number {
  for (; x >= 0x80; x = Math.floor(x / 128)) buf[p++] = (x % 128) | 0x80;
  buf[p] = x;
  return p + 1;
}
const sha = (n: number): Buffer => hash("sha256", buf.subarray(0, n), "buffer");

/** Each node's hash and size, as an importer recomputes them from the post-order stream. */
function hashAll(stream: readonly ExportNode[]): { hashes: Buffer[]; sizes: number[] } {
  const hashes: Buffer[] = [];
  const sizes: number[] = [];
  const stack: number[] = [];
  stream.forEach((n, i) => {
    if (n.height === 0) {
      // varint(0) ‖ varint(1) ‖ varint(version) ‖ bytes(key) ‖ bytes(sha256(value))
      let p = uvarint(uvarint(uvarint(0, 0), 2), 2 * n.version);
      p = uvarint(p, n.key.length);
      buf.set(n.key, p);
      p += n.key.length;
      buf[p] = 32;
      buf.set(hash("sha256", n.value!, "buffer"), p + 1);
      hashes.push(sha(p + 33));
      sizes.push(1);
    } else {
      // varint(height) ‖ varint(size) ‖ varint(version) ‖ bytes(left hash) ‖ bytes(right hash)
      const [r, l] = [stack.pop()!, stack.pop()!];
      sizes.push(sizes[l]! + sizes[r]!);
      const p = uvarint(uvarint(uvarint(0, 2 * n.height), 2 * sizes[i]!), 2 * n.version);
      buf[p] = 32;
      buf.set(hashes[l]!, p + 1);
      buf[p + 33] = 32;
      buf.set(hashes[r]!, p + 34);
      hashes.push(sha(p + 66));
    }
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
  b.log(`import of ${nodes.toLocaleString("en-US")} nodes`);
  const dst = join(b.dir("state-sync"), "imported");
  let imported: Tree | undefined;
  const importNs = await timeNsAsync(async () => (imported = await Tree.import(dst, stream, { version, expectedHash: root })));
  if (Buffer.compare(imported!.hash, root) !== 0 || imported!.size !== size) throw new Error("bench: the import does not match");
  imported!.close();

  gc();
  b.log("floor: hashing and inserting the same nodes");
  const { ns: hashNs, result: h } = timed(() => hashAll(stream));
  if (Buffer.compare(h.hashes[nodes - 1]!, root) !== 0) throw new Error("bench: the floor's hashing does not reach the root hash");
  const files = perLayout((l) => join(b.dir("state-sync-floor"), `${l.replace(" ", "-")}.sqlite`));
  const insertNs = perLayout((l) => timeNs(() => {
    const db = plainDb(files[l]);
    db.exec(`CREATE TABLE kv (key BLOB NOT NULL, version INTEGER NOT NULL, value BLOB, PRIMARY KEY (key, version))${layoutSql(l)};
      CREATE TABLE leaf (version INTEGER NOT NULL, seq INTEGER NOT NULL, key BLOB NOT NULL, hash BLOB NOT NULL, PRIMARY KEY (version, seq))${layoutSql(l)};
      CREATE TABLE branch (version INTEGER NOT NULL, seq INTEGER NOT NULL, key BLOB NOT NULL, height INTEGER NOT NULL, size INTEGER NOT NULL,
        hash BLOB NOT NULL, left_version INTEGER, left_seq INTEGER, right_version INTEGER, right_seq INTEGER, PRIMARY KEY (version, seq))${layoutSql(l)};`);
    const [kv, leaf, branch] = ["kv VALUES (?, ?, ?)", "leaf VALUES (?, ?, ?, ?)", "branch VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"].map((s) => db.prepare(`INSERT INTO ${s}`));
    // Node keys as in IAVL v2 (SPEC §5): per version, branches 1, 2, … and leaves 2^31 + 1, ….
    const next = new Map<number, number>();
    const seqs: number[] = [];
    const stack: number[] = [];
    db.transaction(() => stream.forEach((n, i) => {
      const k = n.height === 0 ? -n.version : n.version;
      const seq = (next.get(k) ?? (n.height === 0 ? 2 ** 31 : 0)) + 1;
      next.set(k, seq);
      seqs.push(seq);
      if (n.height === 0) kv!.run(n.key, n.version, n.value), leaf!.run(n.version, seq, n.key, h.hashes[i]);
      else {
        const [r, l] = [stack.pop()!, stack.pop()!];
        branch!.run(n.version, seq, n.key, n.height, h.sizes[i], h.hashes[i], stream[l]!.version, seqs[l], stream[r]!.version, seqs[r]);
      }
      stack.push(i);
    })).immediate();
    db.close();
  }));
  const floor = fasterPlain(perLayout((l) => nodes / ((hashNs + insertNs[l]) / 1e9)), "nodes/s", "hash every node + insert the same rows in 1 tx");
  b.row({ name: `import via Tree.import (${nodes.toLocaleString("en-US")} nodes, stream in memory)`, value: nodes / (importNs / 1e9), unit: "nodes/s", ...floor, target: 1.67, note: `import ${(importNs / 1e9).toFixed(1)} s; floor hashing ${(hashNs / 1e9).toFixed(1)} s; imported store ${mib(bytesOf(dst)).toFixed(0)} MiB, floor files ${LAYOUTS.map((l) => `${l} ${mib(bytesOf(files[l])).toFixed(0)}`).join(", ")} MiB` });
  b.row({ name: "import time against building the same tree by commits", value: importNs / 1e9, unit: "s", floor: `${g.versions} commits of ${g.ops.toLocaleString("en-US")} changes (the initial load excluded)`, floorValue: g.treeNs / 1e9, note: "context: how much faster a node joins by state sync than by replaying history" });
}
