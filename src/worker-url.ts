/**
 * Starting the library's worker threads, whether it runs from its TypeScript sources or from `dist/`.
 * @module
 */
import { Worker, type WorkerOptions } from "node:worker_threads";

const fromSource = import.meta.url.endsWith(".ts");

/**
 * Starts worker entry `folder/name` (a sibling module of this file). From the sources, the worker first registers
 * tsx's loader itself: loader flags of the parent (the tsx CLI's among them) do not reliably reach worker threads.
 */
export function startWorker(folder: string, name: string, options: WorkerOptions): Worker {
  const entry = new URL(`./${folder}/${name}${fromSource ? ".ts" : ".js"}`, import.meta.url).href;
  const code = fromSource
    ? `import(${JSON.stringify(import.meta.resolve("tsx/esm/api"))}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`
    : `import(${JSON.stringify(entry)});`;
  return new Worker(code, { ...options, eval: true });
}
