/**
 * Change streams: the changes per second that `changes(from, to)` of a read-only handle reads over a span of versions
 * of the mixed profile's bank store (values ÷10, changes per version ÷2), and the same span through
 * `GET /v1/changes` of a live service (NDJSON over loopback, the client in the same process), both beside a raw scan
 * of the rows the store logs them in: plain SQL over the same `versions` and `leaves` tables, one SELECT per version
 * of its leaves rows by id, each key and value read (the floor). The three run in alternating rounds, medians kept.
 * @module
 */
import { join } from "node:path";
import { Tree } from "../src/index.js";
import { startServer } from "../src/serve/server.js";
import { plainDb } from "./floors.js";
import { floorOf, type Bench } from "./report.js";
import { load, replay, scaled, treeSubject } from "./subjects.js";
import { consume, int, median, timeNs, timeNsAsync } from "./timing.js";
import { BANK, Workload } from "./workload.js";

const SEED = 41;

/** Reads the changes of [from, to] with plain SQL: each version's leaves rows, in id order; returns the count. */
function rawScan(file: string, from: number, to: number): number {
  const db = plainDb(file, true);
  try {
    const spans = db.prepare("SELECT first_leaf, leaf_rows FROM versions WHERE version BETWEEN ? AND ? ORDER BY version").raw().all(from, to) as Array<[number, number]>;
    const rows = db.prepare("SELECT key, hash IS NULL, value FROM leaves WHERE id >= ? AND id < ? ORDER BY id").raw();
    let n = 0;
    let bytes = 0;
    for (const [first, count] of spans) {
      for (const r of rows.iterate(first, first + count) as Iterable<[Uint8Array, number, Uint8Array | null]>) {
        bytes += r[0].length + (r[1] === 1 || r[2] === null ? 0 : r[2].length);
        n++;
      }
    }
    consume(bytes);
    return n;
  } finally {
    db.close();
  }
}

export async function changes(b: Bench): Promise<void> {
  const versions = b.q(30, 200);
  const rounds = b.q(3, 5);
  const profiles = scaled([BANK], { initialSize: b.q(3_000, 20_000), values: 10, ops: 2 });
  const w = new Workload(profiles, SEED);
  const dir = b.dir("changes");
  const subject = treeSubject(dir, ["bank"]);
  b.log(`loading ${int(profiles[0]!.initialSize)} keys, then ${versions} versions`);
  await load(w, [subject]);
  await replay(b, w, versions, [subject]);
  subject.close();
  const storeDir = join(dir, "bank");
  // The versions after the initial load.
  const [from, to] = [2, 1 + versions];

  const reader = Tree.openReadOnly(storeDir);
  const service = await startServer(storeDir, { port: 0 });
  const url = `${service.url}/v1/changes?from=${from}&to=${to}`;
  const lib = (): number => {
    let n = 0;
    let bytes = 0;
    for (const c of reader.changes(from, to)) {
      bytes += c.key.length + (c.value?.length ?? 0);
      n++;
    }
    consume(bytes);
    return n;
  };
  const http = async (): Promise<number> => {
    const res = await fetch(url);
    if (res.status !== 200 || res.body === null) throw new Error(`bench: GET /v1/changes answered ${res.status}`);
    let n = 0;
    for await (const chunk of res.body) {
      const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      for (let at = buf.indexOf(10); at !== -1; at = buf.indexOf(10, at + 1)) n++;
    }
    return n;
  };
  const expected = rawScan(join(storeDir, "iavl.sqlite"), from, to);
  if (expected === 0) throw new Error("bench: the store logged no changes");
  const ns = { floor: [] as number[], lib: [] as number[], http: [] as number[] };
  for (let r = 0; r < rounds; r++) {
    let n = 0;
    ns.floor.push(timeNs(() => (n = rawScan(join(storeDir, "iavl.sqlite"), from, to))));
    if (n !== expected) throw new Error(`bench: the raw scan read ${n} rows, then ${expected}`);
    ns.lib.push(timeNs(() => (n = lib())));
    if (n !== expected) throw new Error(`bench: changes() gave ${n} changes, the raw scan ${expected}`);
    ns.http.push(await timeNsAsync(async () => (n = await http())));
    if (n !== expected) throw new Error(`bench: GET /v1/changes gave ${n} lines, the raw scan ${expected}`);
  }
  reader.close();
  await service.close();

  const perSec = (xs: number[]): number => expected / (median(xs) / 1e9);
  const floor = floorOf("plain SQL over the same versions and leaves rows, one SELECT per version", perSec(ns.floor));
  const span = `${versions} versions × ~${int(expected / versions)} changes`;
  b.row(`changes(from, to) of a read-only handle, ${span}`, perSec(ns.lib), "changes/s", floor, {
    note: `median of ${rounds} rounds over ${int(expected)} changes`,
  });
  b.row(`GET /v1/changes, NDJSON over loopback (client in the same process), ${span}`, perSec(ns.http), "changes/s", floor, {
    note: "hex encoding, chunks of 16 KiB pulled as the client reads",
  });
}
