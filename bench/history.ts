/**
 * A key's history: `history(key)` of a read-only handle and `GET /v1/history` of a live service (JSON over loopback,
 * the client in the same process), for a key changed in every tenth of 1,000 versions (quick: 200) among 1M keys
 * (quick: 100k) with 1,000 other changes a version, all versions kept, against plain SQL reading the same rows: one
 * range of the leaves table's `(key, version)` index, newest first, 100 rows. The three alternate, medians kept. The
 * client is node:http on a kept-alive connection (Node's fetch adds ~0.6 ms a request here).
 * @module
 */
import { Agent, createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { Tree } from "../src/index.js";
import { startServer } from "../src/serve/server.js";
import { plainDb } from "./floors.js";
import { floorOf, type Bench } from "./report.js";
import { keyOf, valueOf } from "./scale-data.js";
import { consume, int, median, timeNs, timeNsAsync } from "./timing.js";
import { Rng } from "./workload.js";

/** Versions apart at which the key whose history is read changes. */
const EVERY = 10;
const LIMIT = 100;

export async function history(b: Bench): Promise<void> {
  const [keys, versions, rounds] = [b.q(100_000, 1_000_000), b.q(200, 1_000), b.q(200, 1_000)];
  const dir = b.dir("history");
  const store = join(dir, "store");
  const hot = keyOf(keys); // a key of its own, outside the others
  b.log(`${int(keys)} keys, then ${versions} versions × 1,000 changes, one key changed every ${EVERY}th`);
  const t = Tree.open(store);
  for (let i = 0; i < keys; i++) t.set(keyOf(i), valueOf(i, 1));
  t.commit();
  const rng = new Rng(26);
  for (let v = 2; v <= versions + 1; v++) {
    for (let j = 0; j < 1_000; j++) {
      const i = rng.int(keys);
      t.set(keyOf(i), valueOf(i, v));
    }
    if (v % EVERY === 0) t.set(hot, valueOf(keys, v));
    t.commit();
  }
  const latest = t.version;
  t.close();

  const reader = Tree.openReadOnly(store);
  const service = await startServer(store, { port: 0 });
  const url = `${service.url}/v1/history?key=${Buffer.from(hot).toString("hex")}&limit=${LIMIT}`;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const db = plainDb(join(store, "iavl.sqlite"), true);
  const scan = db.prepare(`SELECT version, value FROM leaves WHERE key = ? AND version >= 1 AND version <= ? ORDER BY version DESC LIMIT ${LIMIT}`).raw();
  const count = (n: number, what: string): void => {
    if (n !== Math.min(LIMIT, Math.floor(latest / EVERY))) throw new Error(`bench: ${what} gave ${n} entries`);
  };
  // The transport alone: a bare node:http server sending the service's answer, read by the same client.
  const answer = await getBytes(url, agent);
  const bare = createServer((_, res) => res.writeHead(200, { "content-type": "application/json" }).end(answer));
  await new Promise<void>((done) => bare.listen(0, "127.0.0.1", done));
  const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}/`;
  const ns = { floor: [] as number[], lib: [] as number[], http: [] as number[], bare: [] as number[] };
  for (let r = 0; r < rounds + 10; r++) {
    const keep = r >= 10; // the first 10 rounds warm up
    let n = 0;
    const floorNs = timeNs(() => {
      const rows = scan.all(hot, latest) as Array<[number, Uint8Array]>;
      consume(rows);
      n = rows.length;
    });
    count(n, "the plain scan");
    const libNs = timeNs(() => (n = reader.history(hot, { limit: LIMIT }).entries.length));
    count(n, "history()");
    const httpNs = await timeNsAsync(async () => {
      n = ((await getJson(url, agent)) as { entries: unknown[] }).entries.length;
    });
    count(n, "GET /v1/history");
    const bareNs = await timeNsAsync(async () => {
      n = ((await getJson(bareUrl, agent)) as { entries: unknown[] }).entries.length;
    });
    count(n, "the bare server");
    if (keep) ns.floor.push(floorNs), ns.lib.push(libNs), ns.http.push(httpNs), ns.bare.push(bareNs);
  }
  agent.destroy();
  await new Promise((done) => bare.close(done));
  db.close();
  reader.close();
  await service.close();

  const floor = floorOf(`plain SQL: the same ${LIMIT} rows by the (key, version) index`, median(ns.floor));
  const changed = Math.floor(latest / EVERY);
  const what = `${Math.min(LIMIT, changed)} of ${int(changed)} changes of a key among ${int(keys)} keys, ${int(latest)} versions kept`;
  b.row(`history(key) of a read-only handle, ${what}`, median(ns.lib), "ns", floor, { target: 2, note: `median of ${rounds} rounds` });
  b.row("GET /v1/history of that key, JSON over loopback (client in the same process)", median(ns.http), "ns", floor, {
    target: 3,
    note: "hex encoding; node:http client, kept-alive connection",
  });
  b.row(`a bare node:http server sending the same ${int(answer.length)}-byte answer, no read (the transport's share)`, median(ns.bare), "ns", floor, {
    note: "the same client; what GET /v1/history costs beyond the read before the service does anything",
  });
}

/** The body of a GET of `url`, as bytes. */
async function getBytes(url: string, agent: Agent): Promise<Buffer> {
  return Buffer.from(JSON.stringify(await getJson(url, agent)));
}

/** The JSON body of a GET of `url` (status 200 expected). */
function getJson(url: string, agent: Agent): Promise<unknown> {
  return new Promise((resolve, reject) => {
    request(url, { agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", reject);
      res.on("end", () => {
        if (res.statusCode !== 200) reject(new Error(`bench: GET ${url} answered ${res.statusCode}`));
        else resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      });
    }).on("error", reject).end();
  });
}
