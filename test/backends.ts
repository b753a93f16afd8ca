import { Tree } from "../src/index.js";

/** A way to make a fresh tree; every core suite runs once per backend. */
export interface Backend {
  name: string;
  make(): Tree;
}

export const backends: Backend[] = [{ name: "memory", make: () => Tree.memory() }];
