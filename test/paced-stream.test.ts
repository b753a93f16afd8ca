/**
 * The streams' shared pacing (src/serve/paced-stream.ts): jobs run in their order, in turns of a few milliseconds
 * that give way to the rest of the event loop, so a burst of slow stream starts cannot hold a short request up for all
 * of them; a paced stream delivers its chunks in order, ends, and stops its source when it is destroyed.
 */
import { describe, expect, it } from "vitest";
import { paced, pacedStream } from "../src/serve/paced-stream.js";

/** Takes `ms` of the event loop's time. */
function spin(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

describe("paced stream jobs", () => {
  it("run in order and let the event loop in between turns", async () => {
    const ran: number[] = [];
    const all = Array.from({ length: 50 }, (_, i) =>
      paced(() => {
        spin(1);
        ran.push(i);
        return i;
      }),
    );
    // Queued after the first turn: it runs once that turn gives way, long before the 50 ms of jobs are done.
    const between = new Promise<number>((resolve) => setImmediate(() => resolve(ran.length)));
    expect(await Promise.all(all)).toEqual([...Array(50).keys()]);
    expect(ran).toEqual([...Array(50).keys()]);
    const seen = await between;
    expect(seen).toBeGreaterThan(0);
    expect(seen).toBeLessThan(50);
  });

  it("go on after a stream's job throws in its turn", async () => {
    const stderr = process.stderr.write.bind(process.stderr);
    const logged: string[] = [];
    process.stderr.write = ((chunk: string) => logged.push(String(chunk)) > 0) as typeof process.stderr.write;
    try {
      let failed = 0;
      const stream = pacedStream<string>({
        first: "a",
        next: () => {
          throw new Error("a failed read");
        },
        fail: () => {
          failed++;
          throw new Error("a source whose failure handler fails");
        },
        stop: () => undefined,
      });
      stream.resume();
      // The job that threw was logged; the next job still gets its turn.
      while (failed === 0) expect(await paced(() => 7)).toBe(7);
      expect(await paced(() => 8)).toBe(8);
      expect(logged.join("")).toContain("a source whose failure handler fails");
    } finally {
      process.stderr.write = stderr;
    }
  });

  it("reject with what the work threw, and the jobs after it still run", async () => {
    const failing = paced(() => {
      throw new Error("a failed read");
    });
    const after = paced(() => 7);
    await expect(failing).rejects.toThrow("a failed read");
    expect(await after).toBe(7);
  });
});

describe("pacedStream", () => {
  it("delivers the first chunk and the rest in order, then ends", async () => {
    const rest = ["b", "c", "d"];
    const stream = pacedStream<string>({ first: "a", next: () => rest.shift() ?? null, fail: () => undefined, stop: () => undefined });
    const got: string[] = [];
    for await (const chunk of stream) got.push(chunk as string);
    expect(got).toEqual(["a", "b", "c", "d"]);
  });

  it("hands a failure of next to its source once, and stops the source when destroyed", async () => {
    const failures: unknown[] = [];
    let stopped = 0;
    let n = 0;
    const stream = pacedStream<string>({
      first: "first",
      next: () => {
        if (++n === 2) throw new Error("damaged");
        return `chunk ${n}`;
      },
      fail: (e, s) => {
        failures.push(e);
        s.push("error line");
      },
      stop: () => stopped++,
    });
    const got: string[] = [];
    await new Promise<void>((resolve) => {
      stream.on("data", (c: string) => {
        got.push(c);
        if (c === "error line") resolve();
      });
    });
    expect(got).toEqual(["first", "chunk 1", "error line"]);
    expect(failures).toHaveLength(1);
    expect((failures[0] as Error).message).toBe("damaged");
    stream.destroy();
    await new Promise((resolve) => stream.once("close", resolve));
    expect(stopped).toBe(1);
  });
});
