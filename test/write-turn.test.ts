/**
 * Turns at the write lock (src/base/write-turn.ts): a background writer's transactions wait while the owner writes,
 * so that a commit never waits out a prune's run of back-to-back transactions; and each write of a connection that
 * yields (the prune thread's) asks first. The owner here is a real worker thread.
 */
import { Worker } from "node:worker_threads";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { WriteTurn } from "../src/base/write-turn.js";
import { openWriter } from "../src/sqlite/connection.js";
import { writeTransaction, yieldBeforeWrites } from "../src/sqlite/write-errors.js";
import { tempDir } from "./backends.js";

/** A thread that counts itself in as the owner, sets `flags[1]` just before it counts itself out after `ms`, and ends. */
function ownerThread(turn: WriteTurn, flags: Int32Array, ms: number): Worker {
  const code = `
    const { workerData } = require("node:worker_threads");
    const count = new Int32Array(workerData.turn, 0, 1);
    const flags = new Int32Array(workerData.flags);
    Atomics.add(count, 0, 1);
    Atomics.store(flags, 0, 1);
    Atomics.notify(flags, 0);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, workerData.ms);
    Atomics.store(flags, 1, 1);
    if (Atomics.sub(count, 0, 1) === 1) Atomics.notify(count, 0);
  `;
  return new Worker(code, { eval: true, workerData: { turn: turn.buffer, flags: flags.buffer, ms } });
}

describe("WriteTurn", () => {
  it("holds a background writer back until the owner's write is over", async () => {
    const turn = new WriteTurn();
    const flags = new Int32Array(new SharedArrayBuffer(8));
    const owner = ownerThread(turn, flags, 300);
    Atomics.wait(flags, 0, 0, 5_000); // the owner has counted itself in
    expect(Atomics.load(flags, 0)).toBe(1);
    turn.yieldToOwner(10_000);
    expect(Atomics.load(flags, 1), "returned before the owner's write ended").toBe(1);
    await new Promise((r) => owner.once("exit", r));
  });

  it("waits no longer than it is told to, for an owner that never stops", async () => {
    const turn = new WriteTurn();
    const flags = new Int32Array(new SharedArrayBuffer(8));
    const owner = ownerThread(turn, flags, 3_000);
    Atomics.wait(flags, 0, 0, 5_000);
    turn.yieldToOwner(50);
    expect(Atomics.load(flags, 1), "the owner was still writing").toBe(0);
    await new Promise((r) => owner.once("exit", r));
  });

  it("counts the owner out even when its write throws", () => {
    const turn = new WriteTurn();
    expect(() => turn.owner(() => { throw new Error("no room"); })).toThrow("no room");
    expect(new Int32Array(turn.buffer)[0]).toBe(0);
    expect(turn.owner(() => 7)).toBe(7);
  });

  it("makes every write transaction of a yielding connection ask first, and no other", () => {
    const dir = tempDir("write-turn");
    const yielding = openWriter(join(dir, "a.sqlite"), "normal");
    const plain = openWriter(join(dir, "b.sqlite"), "normal");
    let asked = 0;
    yieldBeforeWrites(yielding, () => asked++);
    for (const db of [yielding, plain]) {
      writeTransaction(db, "making a table", () => db.exec("CREATE TABLE t (x)"));
      writeTransaction(db, "writing", () => db.prepare("INSERT INTO t VALUES (1)").run());
    }
    expect(asked).toBe(2);
    yielding.close();
    plain.close();
  });
  it("carries the newest automatic prune target asked to a thread that reads it from the shared buffer, never an older one", async () => {
    const turn = new WriteTurn();
    expect(turn.markAsked()).toBe(0);
    turn.askMark(40);
    turn.askMark(35); // an older target asked late changes nothing
    // Past 2^31: versions are not bounded by 32 bits.
    const big = 2 ** 40 + 7;
    const read = (): Promise<number> =>
      new Promise((resolve, reject) => {
        const code = `
          const { workerData, parentPort } = require("node:worker_threads");
          parentPort.postMessage(Number(Atomics.load(new BigInt64Array(workerData, 8, 1), 0)));
        `;
        const w = new Worker(code, { eval: true, workerData: turn.buffer });
        w.once("message", resolve);
        w.once("error", reject);
      });
    expect(await read()).toBe(40);
    turn.askMark(big);
    expect(await read()).toBe(big);
    expect(new WriteTurn(turn.buffer).markAsked()).toBe(big);
  });
});
