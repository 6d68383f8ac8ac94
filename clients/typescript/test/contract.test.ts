// Contract: the client never uses a line reader that splits on U+2028/U+2029 (node:readline), and never a shell.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

// Compiled to dist/test/; the sources are two levels up.
const srcDir = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "src");

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );
}

test("no source uses node:readline or a shell", () => {
  const files = sources(srcDir);
  assert.ok(files.length > 0);
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    assert.doesNotMatch(text, /from\s+["'](node:)?readline["']|require\(["'](node:)?readline["']\)/, file);
    assert.doesNotMatch(text, /shell:\s*true/, file);
  }
});
