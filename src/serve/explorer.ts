/**
 * The explorer page (`GET /`), a fastify plugin: the page and its modules from the package's `explorer/` folder, and
 * the proof verifier the script runs, as ES modules: `iavlite/verify` (src/verify) under `/explorer/verify/` and the
 * `@noble/hashes` files it imports under `/explorer/noble/`, which the page's import map names. Nothing is bundled:
 * running from `dist/`, the verifier's files are the compiled ones beside this module, sent as they are; running from
 * the TypeScript sources (tsx, the tests), each is transpiled once by esbuild (a development dependency, as tsx is),
 * so the browser always runs the verifier of the code that serves it.
 *
 * The page loads no inline script but its import map, whose hash the Content-Security-Policy names; scripts, styles
 * and requests go to this origin only.
 * @module
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { FastifyInstance, FastifyReply } from "fastify";
import { packageFile } from "../base/package-files.js";
import { ApiError } from "./errors.js";

const JS = "text/javascript; charset=utf-8";

/**
 * The page's own modules in `explorer/`: explorer.js starts the page and imports the others by relative URL. Only
 * these are sent (and package.json's `files` lists them).
 */
const EXPLORER_MODULES = ["explorer.js", "page.js", "service.js", "proofs.js", "status.js", "url.js", "lookup.js", "history.js", "keys.js", "changes.js"];

/** Where the files are. */
function locations(): { page: URL; verify: URL; noble: URL; fromSource: boolean } {
  const fromSource = import.meta.url.endsWith(".ts");
  return {
    // The index.html in it, not just the folder: the page is what must be there.
    page: new URL("./", pathToFileURL(packageFile(import.meta.url, "explorer/index.html", "the explorer folder"))),
    verify: new URL("../verify/", import.meta.url),
    noble: new URL("./", import.meta.resolve("@noble/hashes/sha2.js")),
    fromSource,
  };
}

/** The Content-Security-Policy of the page: nothing from elsewhere, no inline script but the import map. */
function policy(html: string): string {
  // String.match rather than RegExp.prototype.exec, which the layer test reads as SQL run outside src/sqlite.
  const map = html.match(/<script type="importmap">([\s\S]*?)<\/script>/);
  if (map === null) throw new Error("explorer/index.html has no import map");
  const hash = createHash("sha256").update(map[1]!).digest("base64");
  return [
    "default-src 'none'",
    `script-src 'self' 'sha256-${hash}'`,
    "style-src 'self'",
    "connect-src 'self'",
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** The `.js` files of folder `dir` by name (from `.ts` sources: the name they are imported by). */
function modules(dir: URL, fromSource: boolean): Map<string, URL> {
  const files = new Map<string, URL>();
  for (const f of readdirSync(dir)) {
    if (fromSource ? f.endsWith(".ts") && !f.endsWith(".d.ts") : f.endsWith(".js")) files.set(f.replace(/\.ts$/, ".js"), new URL(f, dir));
  }
  return files;
}

/** Registers `GET /` and the files under `/explorer/`. */
export async function explorerRoutes(app: FastifyInstance): Promise<void> {
  const where = locations();
  const html = readFileSync(new URL("index.html", where.page), "utf8");
  const csp = policy(html);
  const assets = new Map<string, string>([...EXPLORER_MODULES.map((f) => [f, JS] as const), ["explorer.css", "text/css; charset=utf-8"]]);
  const verify = modules(where.verify, where.fromSource);
  const noble = modules(where.noble, false);
  // Sent as read; from sources, transpiled once.
  const cache = new Map<string, string>();

  const missing = (file: string): ApiError => new ApiError(404, "NOT_FOUND", `no file ${file.slice(0, 100)}`);
  const send = (reply: FastifyReply, type: string, body: string): FastifyReply =>
    reply.type(type).header("cache-control", "no-cache").header("x-content-type-options", "nosniff").send(body);
  const read = (url: URL): string => {
    let text = cache.get(url.href);
    if (text === undefined) cache.set(url.href, (text = readFileSync(url, "utf8")));
    return text;
  };

  app.get("/", async (_req, reply) =>
    send(reply.header("content-security-policy", csp).header("referrer-policy", "no-referrer"), "text/html; charset=utf-8", html),
  );

  app.get<{ Params: { file: string } }>("/explorer/:file", async (req, reply) => {
    const type = assets.get(req.params.file);
    if (type === undefined) throw missing(req.params.file);
    return send(reply, type, read(new URL(req.params.file, where.page)));
  });

  app.get<{ Params: { file: string } }>("/explorer/verify/:file", async (req, reply) => {
    const url = verify.get(req.params.file);
    if (url === undefined) throw missing(req.params.file);
    if (!where.fromSource) return send(reply, JS, read(url));
    let code = cache.get(url.href);
    if (code === undefined) {
      const { transform } = await import("esbuild");
      const out = await transform(readFileSync(url, "utf8"), { loader: "ts", format: "esm", target: "es2022", sourcefile: fileURLToPath(url) });
      cache.set(url.href, (code = out.code));
    }
    return send(reply, JS, code);
  });

  app.get<{ Params: { file: string } }>("/explorer/noble/:file", async (req, reply) => {
    const url = noble.get(req.params.file);
    if (url === undefined) throw missing(req.params.file);
    return send(reply, JS, read(url));
  });
}
