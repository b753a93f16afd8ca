/**
 * The one way the library talks to its threads: shared slots that either side reads, sets and waits on (so that an
 * owner blocked in a synchronous call still hears its thread), buffers posted by transfer rather than copied, one
 * close that waits until the thread has let go of the store, and the pause-and-retry of a write that met a lock. It
 * also finds a thread's entry, from the sources (through tsx) or from `dist/`, for the threads it starts and for a
 * pool (piscina, the prune thread's) that starts its own.
 *
 * Every channel reserves two slots: {@link STOP}, set by the owner, and {@link CLOSED}, set by the thread on every
 * way out once it holds no connection. A protocol numbers its own slots from {@link FIRST_SLOT}.
 * @module
 */
import { fileURLToPath, pathToFileURL } from "node:url";
import { parentPort, Worker, type MessagePort, type WorkerOptions } from "node:worker_threads";

/** Slot the owner sets to ask the thread to stop. */
export const STOP = 0;
/** Slot the thread sets once it holds nothing of the store any more. */
export const CLOSED = 1;
/** The first slot a protocol may use for itself. */
export const FIRST_SLOT = 2;

/** Integer slots in shared memory (BigInt64, so that a version number always fits), with waits on their changes. */
export class Slots {
  private readonly a: BigInt64Array;

  /** Slots over `buffer`, made by {@link Slots.create} on the owner's side. */
  constructor(readonly buffer: SharedArrayBuffer) {
    this.a = new BigInt64Array(buffer);
  }

  /** `count` slots (the reserved two included), all 0. */
  static create(count: number): Slots {
    return new Slots(new SharedArrayBuffer(8 * count));
  }

  get(slot: number): number {
    return Number(Atomics.load(this.a, slot));
  }

  /** Sets `slot` and wakes whoever waits on it. */
  set(slot: number, value: number): void {
    Atomics.store(this.a, slot, BigInt(value));
    Atomics.notify(this.a, slot);
  }

  /** Sets `slot` to `value` if it holds `expected`, waking whoever waits on it; true if it did. */
  compareExchange(slot: number, expected: number, value: number): boolean {
    const done = Atomics.compareExchange(this.a, slot, BigInt(expected), BigInt(value)) === BigInt(expected);
    if (done) Atomics.notify(this.a, slot);
    return done;
  }

  /** Adds `by` to `slot` and wakes whoever waits on it. */
  add(slot: number, by = 1): void {
    Atomics.add(this.a, slot, BigInt(by));
    Atomics.notify(this.a, slot);
  }

  /** Wakes whoever waits on `slot`, to look at the other slots. */
  wake(slot: number): void {
    Atomics.notify(this.a, slot);
  }

  /** Blocks while `slot` still holds `seen`, for up to `ms`. */
  wait(slot: number, seen: number, ms: number): void {
    Atomics.wait(this.a, slot, BigInt(seen), ms);
  }

  /** Resolves once `slot` no longer holds `seen`, or after `ms`, without blocking the event loop. */
  async waitAsync(slot: number, seen: number, ms: number): Promise<void> {
    const r = Atomics.waitAsync(this.a, slot, BigInt(seen), ms);
    if (r.async) await r.value;
  }
}

/**
 * The worker entry `name` beside `callerUrl` (the caller's `import.meta.url`): the .js of a built package; from the
 * sources, the .ts, or the .js of the built copy `IAVLITE_BUILT` names (the tests build one per run: a thread then
 * starts in a tenth of the CPU that compiling its sources through tsx takes).
 */
function entryOf(callerUrl: string, name: string): { url: string; fromSource: boolean } {
  if (!callerUrl.endsWith(".ts")) return { url: new URL(`./${name}.js`, callerUrl).href, fromSource: false };
  const built = process.env["IAVLITE_BUILT"];
  const at = callerUrl.lastIndexOf("/src/");
  if (built !== undefined && built !== "" && at >= 0) {
    const beside = new URL(`./${name}.js`, callerUrl).href.slice(at + 1);
    return { url: new URL(`dist/${beside}`, pathToFileURL(`${built}/`)).href, fromSource: false };
  }
  return { url: new URL(`./${name}.ts`, callerUrl).href, fromSource: true };
}

/**
 * tsx's loader API, which a thread started from the sources registers itself before it imports its entry: loader
 * flags of the parent (the tsx CLI's among them) do not reliably reach worker threads.
 */
const tsxApi = (): string => JSON.stringify(import.meta.resolve("tsx/esm/api"));

/** Starts the worker entry `name` beside `callerUrl`; from the sources, the thread registers tsx first. */
function startWorker(callerUrl: string, name: string, options: WorkerOptions): Worker {
  const { url, fromSource } = entryOf(callerUrl, name);
  const code = fromSource
    ? `import(${tsxApi()}).then((m) => { m.register(); return import(${JSON.stringify(url)}); });`
    : `import(${JSON.stringify(url)});`;
  return new Worker(code, { ...options, eval: true });
}

/**
 * How a pool that starts its threads from a file (piscina) runs the worker entry `name` beside `callerUrl`: the
 * entry's path, and its threads' node options. From the sources each thread first imports a module that registers
 * tsx, as the threads of {@link ThreadChannel.start} do; `--import tsx` instead would let tsx's CommonJS hook load
 * the entry as CommonJS. From `dist/` none, not even the parent's: the entry is plain JavaScript and needs no loader.
 * Either way, no require(esm) ({@link NO_REQUIRE_ESM}).
 */
export function poolEntry(callerUrl: string, name: string): { filename: string; execArgv: string[] } {
  const { url, fromSource } = entryOf(callerUrl, name);
  const register = `import { register } from ${tsxApi()}; register();`;
  const fromSourceArgs = fromSource ? ["--import", `data:text/javascript,${encodeURIComponent(register)}`, ...QUIET_REQUIRE] : [];
  return { filename: fileURLToPath(url), execArgv: [...fromSourceArgs, ...NO_REQUIRE_ESM] };
}

/**
 * piscina first require()s a thread's entry; from the sources that is a .ts file, which node's CommonJS loader then
 * reads as JavaScript, finds ES syntax in, and prints a warning about before piscina imports it instead. The thread
 * runs none of its own warnings, so from the sources its warnings go unprinted (node ≥ 20.11 has the flag).
 */
const QUIET_REQUIRE = process.allowedNodeEnvironmentFlags.has("--disable-warning") ? ["--disable-warning=Warning"] : [];

/**
 * piscina loads a thread's module with require() and falls back to import(). Node 20's require of an ES module
 * aborted the whole process (V8 fatal errors in module instantiation) when its thread was terminated, or the machine
 * was busy, while it ran: where node has require(esm), the pool's threads go without it.
 */
const NO_REQUIRE_ESM = process.allowedNodeEnvironmentFlags.has("--experimental-require-module") ? ["--no-experimental-require-module"] : [];

/** What every thread of a channel finds in its `workerData`, beside its protocol's own fields. */
export interface ChannelData {
  slots: SharedArrayBuffer;
}

/** Threads started through {@link ThreadChannel.start} that have not exited yet, in this process. */
let running = 0;

/** How many of this process's channels' threads are running (started, not yet exited): what a test can count on. */
export function runningThreads(): number {
  return running;
}

/** The owner's end of a channel to one thread. */
export class ThreadChannel {
  readonly slots: Slots;
  private exited = false;

  /** A channel of `count` slots, for {@link ThreadChannel.start}. */
  private constructor(count: number) {
    this.slots = Slots.create(count);
  }

  /**
   * Starts the worker entry `name` beside `callerUrl` with `data` (and the slots) as its `workerData`. The thread
   * never holds the process open by itself ({@link ref} while someone awaits it); `onFailure` hears an uncaught error.
   */
  static start<D extends object>(
    callerUrl: string,
    name: string,
    count: number,
    data: D,
    transfer: Array<MessagePort | ArrayBuffer> = [],
    onFailure?: (e: Error) => void,
    /** Slot values the thread must see from its first instruction on, by slot. */
    initial: ReadonlyArray<readonly [slot: number, value: number]> = [],
  ): ThreadChannel & { readonly worker: Worker } {
    const ch = new ThreadChannel(count);
    for (const [slot, value] of initial) ch.slots.set(slot, value);
    const workerData: D & ChannelData = { ...data, slots: ch.slots.buffer };
    const worker = startWorker(callerUrl, name, { workerData, transferList: transfer });
    running++;
    worker.once("exit", () => running--);
    worker.on("error", (e) => {
      onFailure?.(e);
      ch.gone();
    });
    worker.on("exit", () => ch.gone());
    worker.unref();
    return Object.assign(ch, { worker });
  }

  /** True once the thread exited or failed. */
  get isGone(): boolean {
    return this.exited;
  }

  /** The thread is gone (exited or failed): wakes every wait on its slots. */
  private gone(): void {
    this.exited = true;
    this.slots.set(CLOSED, 1);
  }

  /**
   * Asks the thread to stop (waking it on `wake`, the slot it sleeps on) and returns once it says it holds nothing
   * of the store, or is gone. A thread that opens a connection per step instead counts its steps in a `holding`
   * slot (each step checks for a stop after counting itself): then the wait is for that count to reach 0. No
   * deadline: a thread that may still write must not outlive the lock of its store, and every thread's steps are
   * bounded.
   */
  close(wake?: number, holding?: number): void {
    this.slots.set(STOP, 1);
    if (wake !== undefined) this.slots.add(wake);
    if (holding === undefined) {
      while (this.slots.get(CLOSED) === 0 && !this.exited) this.slots.wait(CLOSED, 0, 100);
      return;
    }
    for (let n = this.slots.get(holding); n > 0 && !this.exited; n = this.slots.get(holding)) this.slots.wait(holding, n, 100);
  }
}

/** The thread's end of a channel, from its `workerData`. */
export class ThreadEnd {
  readonly slots: Slots;

  constructor(data: ChannelData) {
    this.slots = new Slots(data.slots);
  }

  /** True once the owner asked the thread to stop. */
  get stopping(): boolean {
    return this.slots.get(STOP) !== 0;
  }

  /** Tells the owner the thread holds nothing of the store any more: call it on every way out. */
  closed(): void {
    this.slots.set(CLOSED, 1);
  }

  /** Closes the thread's connection on its owner's close message, marks the thread closed and lets its port go. */
  closeWith(db: { close(): void }): void {
    try {
      db.close();
    } finally {
      this.closed();
      parentPort?.close();
    }
  }
}

/** Posts `msg` on `port`, moving the memory of `views` to the other side instead of copying it. */
export function postMoving(port: { postMessage(m: unknown, transfer: ArrayBuffer[]): void }, msg: unknown, views: ArrayBufferView[]): void {
  port.postMessage(msg, views.map((v) => v.buffer as ArrayBuffer));
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** Blocks the calling thread for `ms` (a synchronous caller cannot yield to the event loop). */
export function pause(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}

/**
 * Runs `fn`, and while it throws an error that `again` accepts, runs it again after growing pauses (5 ms doubling to
 * 500 ms) for up to `patienceMs`; then the last error is thrown.
 */
export function retrying<T>(fn: () => T, again: (e: unknown) => boolean, patienceMs: number): T {
  const deadline = Date.now() + patienceMs;
  for (let wait = 5; ; wait = Math.min(wait * 2, 500)) {
    try {
      return fn();
    } catch (e) {
      if (!again(e) || Date.now() + wait > deadline) throw e;
      pause(wait);
    }
  }
}
