/**
 * The parent side of bench child processes: a bench/child.ts process started in a role, talked to over IPC.
 * @module
 */
import { fork, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildPackage } from "../test/built-package.js";

let built: string | undefined;

/**
 * bench/child.ts compiled with the package (as the tests build it, in a second or two), once per bench run: children
 * run the store as users run it. Under tsx a process starts ~40 MiB larger, and each of the store's worker threads,
 * which load tsx too, ~20 MiB: the scale section's peak RSS counted ~80 MiB that no user's process holds.
 */
function compiledChild(): string {
  if (built === undefined) {
    const root = mkdtempSync(join(tmpdir(), "iavlite-bench-"));
    process.on("exit", () => rmSync(root, { recursive: true, force: true }));
    buildPackage(root);
    built = join(root, "dist", "bench", "child.js");
  }
  return built;
}

/** A bench/child.ts process in role `role`, exchanging structured-clone messages (Uint8Arrays included) over IPC. */
export class Child {
  private readonly proc: ChildProcess;
  private readonly inbox: unknown[] = [];
  private wake: (() => void) | undefined;
  private exited: Error | undefined;

  constructor(role: string, args: readonly string[]) {
    this.proc = fork(compiledChild(), [role, ...args], {
      cwd: fileURLToPath(new URL("..", import.meta.url)),
      // --expose-gc: a child collects before timed reads, as the bench's own process does (bench/timing.ts gc).
      execArgv: ["--expose-gc"],
      serialization: "advanced",
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.proc.on("message", (m) => (this.inbox.push(m), this.wake?.()));
    this.proc.on("exit", (code) => {
      this.exited = new Error(`bench: child ${role} exited with ${code}`);
      this.wake?.();
    });
  }

  get pid(): number {
    return this.proc.pid!;
  }

  send(message: unknown): void {
    this.proc.send(message as object);
  }

  /** Sends `message` (unless undefined) and resolves with the child's next message. */
  async ask<T>(message?: unknown): Promise<T> {
    if (message !== undefined) this.send(message);
    while (this.inbox.length === 0) {
      if (this.exited !== undefined) throw this.exited;
      await new Promise<void>((r) => (this.wake = r));
    }
    return this.inbox.shift() as T;
  }

  /** The child's next message if one has arrived, without waiting. */
  poll<T>(): T | undefined {
    return this.inbox.shift() as T | undefined;
  }

  kill(): void {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill();
  }
}

/** A server process (`iavlite serve`, or the node:http floor) run with tsx from the repository, and the URL it printed. */
export async function serverProcess(args: string[]): Promise<{ proc: ChildProcess; url: string }> {
  const root = fileURLToPath(new URL("..", import.meta.url));
  const proc = spawn(process.execPath, ["--import", "tsx", ...args], { cwd: root, stdio: ["ignore", "pipe", "inherit"] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    proc.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /listening on (\S+)/.exec(out);
      if (m !== null) resolve(m[1]!);
    });
    proc.once("exit", (code) => reject(new Error(`bench: server exited with ${code} before listening`)));
  });
  return { proc, url };
}
