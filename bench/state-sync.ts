/**
 * State sync: `Tree.import` of the persistent section's grown BANK tree (1M keys, quick: 100k; grown here when that
 * section did not run), its export held in memory so that the export's cost is not in it. The floor is what any
 * importer must do: hash every node bottom-up (node:crypto sha256 over the IAVL preimages, SPEC §1), then insert the
 * rows of the store's design into plain tables of our own in one transaction (per leaf a (key, version) → value row
 * and a (version, seq) → key, hash row, per branch a (version, seq) row with its children), in both layouts. The
 * floor takes the stream one node at a time ({@link ImportFloor}), so the scale section uses it on streams too long
 * to hold in memory.
 * @module
 */
import { hash } from "node:crypto";
import { join } from "node:path";
import type Database from "better-sqlite3";
import { Tree, type ExportNode } from "../src/index.js";
import { fasterPlain, layoutFile, LAYOUTS, layoutSql, perLayout, plainDb, type Layout } from "./floors.js";
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

/** A node whose parent is still to come: what the parent's hash and row need of it. */
type Pending = { hash: Buffer; size: number; version: number; seq: number };

/**
 * The floor of an import, fed a post-order stream one node at a time: what any importer must do. It hashes every
 * node bottom-up and, given a file, inserts the rows of the store's design into plain tables of layout `l` in one
 * transaction. Only the nodes whose parent is still to come are held, so a stream of any length fits in memory.
 */
export class ImportFloor {
  nodes = 0;
  private readonly stack: Pending[] = [];
  private readonly next = new Map<number, number>();
  private readonly db: Database.Database | undefined;
  private readonly ins: Database.Statement[] = [];

  constructor(file?: string, l?: Layout) {
    if (file === undefined) return;
    this.db = plainDb(file);
    this.db.exec(`CREATE TABLE kv (key BLOB, version INTEGER, value BLOB, PRIMARY KEY (key, version))${layoutSql(l!)};
      CREATE TABLE leaf (version INTEGER, seq INTEGER, key BLOB, hash BLOB, PRIMARY KEY (version, seq))${layoutSql(l!)};
      CREATE TABLE branch (version INTEGER, seq INTEGER, key BLOB, height INTEGER, size INTEGER, hash BLOB,
        left_version, left_seq, right_version, right_seq, PRIMARY KEY (version, seq))${layoutSql(l!)};
      BEGIN IMMEDIATE`);
    this.ins = [3, 4, 10].map((n, i) =>
      this.db!.prepare(`INSERT INTO ${["kv", "leaf", "branch"][i]} VALUES (${Array(n).fill("?").join(", ")})`));
  }

  add(n: ExportNode): void {
    // Node keys as in IAVL v2 (SPEC §5): per version, branches 1, 2, … and leaves 2^31 + 1, ….
    const k = n.height === 0 ? -n.version : n.version;
    const seq = (this.next.get(k) ?? (n.height === 0 ? 2 ** 31 : 0)) + 1;
    this.next.set(k, seq);
    const [kv, leaf, branch] = this.ins;
    let p: number;
    let size = 1;
    if (n.height === 0) {
      // varint(0) ‖ varint(1) ‖ varint(version) ‖ bytes(key) ‖ bytes(sha256(value))
      p = uvarint(uvarint(uvarint(uvarint(0, 0), 2), 2 * n.version), n.key.length);
      buf.set(n.key, p);
      buf[(p += n.key.length)] = 32;
      buf.set(hash("sha256", n.value!, "buffer"), p + 1);
      const h = hash("sha256", buf.subarray(0, p + 33), "buffer");
      kv?.run(n.key, n.version, n.value), leaf?.run(n.version, seq, n.key, h);
      this.stack.push({ hash: h, size, version: n.version, seq });
    } else {
      // varint(height) ‖ varint(size) ‖ varint(version) ‖ bytes(left hash) ‖ bytes(right hash)
      const [r, l] = [this.stack.pop()!, this.stack.pop()!];
      size = l.size + r.size;
      p = uvarint(uvarint(uvarint(0, 2 * n.height), 2 * size), 2 * n.version);
      [buf[p], buf[p + 33]] = [32, 32];
      buf.set(l.hash, p + 1);
      buf.set(r.hash, (p += 33) + 1);
      const h = hash("sha256", buf.subarray(0, p + 33), "buffer");
      branch?.run(n.version, seq, n.key, n.height, size, h, l.version, l.seq, r.version, r.seq);
      this.stack.push({ hash: h, size, version: n.version, seq });
    }
    this.nodes++;
  }

  /** Commits the rows; the last node's hash (the root's, after a whole stream). */
  end(): Buffer {
    this.db?.exec("COMMIT");
    this.db?.close();
    return this.stack[this.stack.length - 1]!.hash;
  }
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
  const feed = (f: ImportFloor): Buffer => (stream.forEach((n) => f.add(n)), f.end());
  let floorRoot: Buffer = Buffer.alloc(0);
  const hashNs = timeNs(() => (floorRoot = feed(new ImportFloor())));
  if (Buffer.compare(floorRoot, root) !== 0) throw new Error("bench: the floor's hashes miss the root hash");
  const floorNs = perLayout((l) => timeNs(() => feed(new ImportFloor(layoutFile(dir, "nodes", l), l))));
  const floorRates = perLayout((l) => nodes / (floorNs[l] / 1e9));
  const floor = fasterPlain(floorRates, "nodes/s", "hash every node + insert the same rows in 1 tx");
  const files = LAYOUTS.map((l) => `${l} ${int(mib(bytesOf(layoutFile(dir, "nodes", l))))}`).join(", ");
  const note = `import ${(importNs / 1e9).toFixed(1)} s; floor hashing alone ${(hashNs / 1e9).toFixed(1)} s; imported store ` +
    `${int(mib(bytesOf(join(dir, "imported"))))} MiB, floor files ${files} MiB`;
  const name = `import via Tree.import (${int(nodes)} nodes, stream in memory)`;
  b.row(name, nodes / (importNs / 1e9), "nodes/s", floor, { target: 1.67, note });
  b.row("import time against building the same tree by commits", importNs / 1e9, "s",
    floorOf(`${g.versions} commits of ${int(g.ops)} changes (the initial load excluded)`, g.treeNs / 1e9),
    { note: "context: how much faster a node joins by state sync than by replaying history" });
}
