/**
 * Which methods each path of the service answers, for what fastify's router cannot say: a request its router finds no
 * route for goes to the not-found handler whether the path is unknown (404) or known under other methods (405 Method
 * Not Allowed, with `Allow`), and `OPTIONS` (a CORS preflight among them) has no route of its own. The table is built
 * from fastify's `onRoute` hook, so it holds exactly the routes registered.
 * @module
 */

/** The order `Allow` lists methods in. */
const ORDER = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/** One route's path: static segments, and `:name` parameters that each match one non-empty segment. */
interface Pattern {
  segments: Array<string | null>;
  methods: Set<string>;
}

/** The routes of one app, by path pattern. */
export class RouteMethods {
  private readonly patterns = new Map<string, Pattern>();

  /**
   * Records route `url` (a fastify path, prefix included) for `method`. Only static segments and whole-segment
   * `:name` parameters are understood; a route using more of fastify's syntax (wildcards, regular expressions,
   * several parameters in a segment) is refused, so that the table can never disagree with the router unseen.
   */
  add(method: string | string[], url: string): void {
    let p = this.patterns.get(url);
    if (p === undefined) {
      const segments = url.split("/").map((s) => {
        if (/[*()]/.test(s) || s.indexOf(":", 1) >= 0 || s === ":") throw new Error(`route-methods: unsupported route syntax in ${url}`);
        return s.startsWith(":") ? null : s;
      });
      this.patterns.set(url, (p = { segments, methods: new Set() }));
    }
    for (const m of Array.isArray(method) ? method : [method]) p.methods.add(m.toUpperCase());
  }

  /**
   * The methods `path` (no query string, still percent-encoded) is answered for, OPTIONS among them, in the order
   * `Allow` lists them; undefined when no route has that path.
   */
  allowed(path: string): string[] | undefined {
    const parts = decoded(path).split("/");
    const methods = new Set<string>();
    for (const p of this.patterns.values()) {
      if (p.segments.length !== parts.length) continue;
      if (p.segments.every((s, i) => (s === null ? parts[i] !== "" : s === parts[i]))) for (const m of p.methods) methods.add(m);
    }
    if (methods.size === 0) return undefined;
    methods.add("OPTIONS");
    return [...methods].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  }
}

function rank(method: string): number {
  const i = ORDER.indexOf(method);
  return i < 0 ? ORDER.length : i;
}

/** `path` decoded as the router matches it (`%2F` stays a character of its segment); as it is when malformed. */
function decoded(path: string): string {
  try {
    return decodeURI(path);
  } catch {
    return path;
  }
}
