/**
 * Starting the library's worker threads, whether it runs from its TypeScript sources or from `dist/`.
 * @module
 */
import { Worker, type WorkerOptions } from "node:worker_threads";

/**
 * Starts the worker entry `name`, a module beside `callerUrl` (the caller's `import.meta.url`). From the sources, the
 * worker first registers tsx's loader itself: loader flags of the parent (the tsx CLI's among them) do not reliably
 * reach worker threads.
 */
export function startWorker(callerUrl: string, name: string, options: WorkerOptions): Worker {
  const fromSource = callerUrl.endsWith(".ts");
  const entry = new URL(`./${name}${fromSource ? ".ts" : ".js"}`, callerUrl).href;
  const code = fromSource
    ? `import(${JSON.stringify(import.meta.resolve("tsx/esm/api"))}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`
    : `import(${JSON.stringify(entry)});`;
  return new Worker(code, { ...options, eval: true });
}
