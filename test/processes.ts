/**
 * Real child processes for the tests: node with tsx, stdout read line by line, every child killed after its test,
 * and `iavlite serve` started and waited for until it listens.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterEach, inject } from "vitest";
import { scriptArgs } from "../sim/child-command.js";

/** The repository's root. */
export const root = fileURLToPath(new URL("..", import.meta.url));
/** The CLI's entry in the package built for this run (test/global-setup.ts), as users run the installed `iavlite`. */
export const main = inject("cli");

/** node's arguments to run `args[0]` with the rest: see sim/child-command.ts. */
export function nodeArgs(args: string[]): string[] {
  const [file, ...rest] = args;
  return file === undefined ? [] : [...scriptArgs(file), ...rest];
}

/** A child process whose stdout is read line by line. */
export class Proc {
  readonly lines: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr = "";
  /** True once the child has exited and its output was read to the end. */
  closed = false;
  private waiters: Array<() => void> = [];

  constructor(readonly p: ChildProcess) {
    let buf = "";
    p.stdout!.on("data", (d: Buffer) => {
      buf += d.toString();
      const parts = buf.split("\n");
      buf = parts.pop()!;
      this.lines.push(...parts);
      this.waiters.splice(0).forEach((w) => w());
    });
    p.stderr!.on("data", (d: Buffer) => {
      this.stderr += d.toString();
      this.waiters.splice(0).forEach((w) => w());
    });
    // "close", not "exit": by then every line the child printed has been read.
    this.exited = new Promise((resolve) =>
      p.on("close", (code, signal) => {
        this.closed = true;
        if (buf !== "") this.lines.push(buf);
        resolve({ code, signal });
        this.waiters.splice(0).forEach((w) => w());
      }),
    );
  }

  /**
   * Resolves with the first line at index `from` or later that matches `re`; rejects once the child has exited
   * without printing one. There is no deadline: a child on a busy machine may take long, and the test's timeout is
   * the safety net.
   */
  async line(re: RegExp, from = 0): Promise<RegExpMatchArray> {
    for (let i = from; ; ) {
      for (; i < this.lines.length; i++) {
        const m = re.exec(this.lines[i]!);
        if (m !== null) return m;
      }
      if (this.closed) {
        throw new Error(`no line ${re} (exit ${this.p.exitCode ?? this.p.signalCode}): ${this.stderr}`);
      }
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  /**
   * Resolves with the first whole line of stderr at index `from` or later that matches `re`, as {@link line} does for
   * stdout (a note of a command, say).
   */
  async errLine(re: RegExp, from = 0): Promise<RegExpMatchArray> {
    for (;;) {
      const lines = this.stderr.split("\n");
      if (!this.closed) lines.pop();
      for (const l of lines.slice(from)) {
        const m = re.exec(l);
        if (m !== null) return m;
      }
      if (this.closed) throw new Error(`no stderr line ${re} (exit ${this.p.exitCode ?? this.p.signalCode}): ${this.stderr}`);
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  /** The lines matching `re`, their first group as a number (e.g. the versions of "committed N" lines). */
  numbers(re: RegExp): number[] {
    return this.lines.flatMap((l) => {
      const m = re.exec(l);
      return m === null ? [] : [Number(m[1])];
    });
  }
}

/** Every child started, so that a failing test leaves none running. */
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});

/** Starts `node ...args` in the repository (see {@link nodeArgs}). */
export function node(args: string[]): Proc {
  const p = spawn(process.execPath, nodeArgs(args), { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  children.push(p);
  return new Proc(p);
}

/**
 * Starts `node ...args` as {@link node} does, with stdin a pipe, for a child whose files {@link limitFiles} limits:
 * node ignores SIGXFSZ, so a write past the limit fails (EFBIG) as on a full disk. A child that ended early must not
 * make a write to its stdin an unhandled error: its exit status tells.
 */
export function nodeOnDisk(args: string[]): Proc {
  const p = spawn(process.execPath, nodeArgs(args), { cwd: root, stdio: ["pipe", "pipe", "pipe"] });
  p.stdin!.on("error", () => undefined);
  children.push(p);
  return new Proc(p);
}

/** Sets the soft file-size limit of the running process `pid` to `bytes` (prlimit, util-linux), or lifts it. */
export function limitFiles(pid: number, bytes: number | "unlimited"): void {
  execFileSync("prlimit", ["--pid", String(pid), `--fsize=${bytes}:`]);
}

/** Starts `iavlite serve dir` (on a free port unless `more` names one) and waits until it listens. */
export async function serve(dir: string, ...more: string[]): Promise<{ proc: Proc; url: string }> {
  const proc = node([main, "serve", dir, "--port", "0", ...more]);
  const m = await proc.line(/^listening on (http:\/\/127\.0\.0\.1:\d+)$/);
  return { proc, url: m[1]! };
}
