/**
 * The Node versions the package claims are the ones its whole installed tree accepts: every locked package's
 * `engines.node` admits the oldest Node that our `engines` allows, so `npm ci` on that Node warns of no engine
 * (a dependency that moved to Node 22 once made it warn on Node 20).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { minVersion, satisfies } from "semver";
import { describe, expect, it } from "vitest";
import { root } from "./processes.js";

interface Lock {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
}

describe("engines", () => {
  it("every locked dependency runs on the oldest Node the package claims, and that Node is 20", () => {
    const ours = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { engines: { node: string } }).engines.node;
    const oldest = minVersion(ours)!.version;
    expect(oldest.startsWith("20.")).toBe(true);
    const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")) as Lock;
    const refusing: string[] = [];
    for (const [path, pkg] of Object.entries(lock.packages)) {
      const range = Array.isArray(pkg.engines) ? undefined : pkg.engines?.node;
      if (path !== "" && range !== undefined && !satisfies(oldest, range)) refusing.push(`${path}@${pkg.version}: node ${range}`);
    }
    expect(refusing).toEqual([]);
    expect(satisfies(process.versions.node, ours)).toBe(true);
  });
});
