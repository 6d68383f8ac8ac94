// `npm pack` (and installing from a path or git) of a checkout that was never built gives a package with the
// compiled client in it: `prepare` builds it. Checked on a copy of the sources without `dist/`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

test("npm pack of an unbuilt checkout contains the built client", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "dreb-client-pack-"));
  try {
    for (const entry of ["package.json", "tsconfig.json", "src", "README.md"]) {
      cpSync(path.join(root, entry), path.join(dir, entry), { recursive: true });
    }
    symlinkSync(path.join(root, "node_modules"), path.join(dir, "node_modules"));
    const out = execFileSync("npm", ["pack", "--dry-run", "--json"], { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    const [info] = JSON.parse(out) as [{ files: { path: string }[] }];
    const files = info.files.map((f) => f.path);
    assert.ok(files.includes("dist/src/index.js"), files.join("\n"));
    assert.ok(files.includes("dist/src/index.d.ts"));
    assert.ok(files.includes("dist/src/generated/client.js"));
    assert.ok(!files.some((f) => f.startsWith("dist/test/")), "tests are not shipped");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
