/**
 * The quick-start job: builds a small chain of versions, prints their root hashes and verifies a proof.
 */
import { iavlSpec, verifyMembership, verifyNonMembership } from "@confio/ics23";
import { toHex, Tree } from "../src/index.js";

const enc = new TextEncoder();
const tree = Tree.memory();
for (let v = 1; v <= 5; v++) {
  for (let i = 0; i < 1000; i++) tree.set(enc.encode(`key-${v}-${i}`), enc.encode(`value-${v}-${i}`));
  if (v > 1) for (let i = 0; i < 100; i++) tree.remove(enc.encode(`key-${v - 1}-${i}`));
  const { version, hash } = tree.commit();
  console.log(`version ${version}  keys ${tree.size}  root ${toHex(hash)}`);
}
const key = enc.encode("key-3-500");
const value = tree.get(key)!;
const ok = verifyMembership(tree.proof(key), iavlSpec, tree.hash, key, value);
const absent = enc.encode("key-3-5000");
const okAbsent = verifyNonMembership(tree.proof(absent), iavlSpec, tree.hash, absent);
console.log(`proof of key-3-500 verified by @confio/ics23: ${ok}; non-existence of key-3-5000: ${okAbsent}`);
tree.close();
if (!ok || !okAbsent) process.exit(1);
