// `npm pack` (and `npm publish`) of a checkout that was never built gives a package with the compiled client in it:
// `prepack` builds it (not `prepare`: the tarball then carries no install-time script, which npm 11 warns about on
// every install). Checked on a copy of the sources without `dist/`; the tarball is then installed into a fresh project
// (offline: the package has no dependencies) where a host compiles under a plain `tsc --strict` and, with a dreb
// binary, runs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import ts from "typescript";
import { packageRoot as root, realDrebBin } from "./real-bin.js";

function unbuiltCopy(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "dreb-client-pack-"));
  for (const entry of ["package.json", "tsconfig.json", "src", "README.md"]) {
    cpSync(path.join(root, entry), path.join(dir, entry), { recursive: true });
  }
  symlinkSync(path.join(root, "node_modules"), path.join(dir, "node_modules"));
  return dir;
}

test("npm pack of an unbuilt checkout contains the built client", () => {
  const dir = unbuiltCopy();
  try {
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

const HOST = `import { DrebClient, RpcError, type RpcEvent } from "@dreb-rs/client";

const seen: string[] = [];
await using client = await DrebClient.spawn({ provider: "faux", args: ["--no-session"] });
client.onEvent((event: RpcEvent) => {
  if (event.type === "agent_end") seen.push(\`agent_end \${event.messages.length}\`);
});
const result = await client.run({ message: "hello" });
try {
  await client.prompt({ message: "/fork" });
} catch (error) {
  if (error instanceof RpcError) seen.push("refused");
}
console.log(JSON.stringify({ seen, finalText: result.finalText, stopReason: result.stopReason }));
`;

test("the packed tarball installs into a fresh project, where a host compiles under tsc --strict and runs", () => {
  const dir = unbuiltCopy();
  const project = mkdtempSync(path.join(tmpdir(), "dreb-client-host-"));
  try {
    const out = execFileSync("npm", ["pack", "--json", "--pack-destination", project], { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    const [info] = JSON.parse(out) as [{ filename: string }];
    const tarball = path.join(project, info.filename);
    assert.ok(statSync(tarball).size > 10_000, "a non-empty package");

    writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "host", private: true, type: "module" }));
    const install = spawnSync("npm", ["install", "--offline", "--no-audit", "--no-fund", tarball], { cwd: project, encoding: "utf8" });
    assert.equal(install.status, 0, install.stdout + install.stderr);
    assert.doesNotMatch(install.stdout + install.stderr, /install-scripts|prepare/); // no install-time script
    const installed = path.join(project, "node_modules", "@dreb-rs", "client");
    assert.ok(existsSync(path.join(installed, "dist", "src", "index.d.ts")));
    assert.ok(!existsSync(path.join(installed, "src")), "only the build is shipped");

    writeFileSync(path.join(project, "host.ts"), HOST);
    // A host's plain strict config; @types/node (the host's own dev dependency) from this package's node_modules.
    const config = {
      compilerOptions: {
        strict: true,
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        typeRoots: [path.join(root, "node_modules", "@types")],
        types: ["node"],
      },
      files: ["host.ts"],
    };
    const parsed = ts.parseJsonConfigFileContent(config, ts.sys, project);
    const program = ts.createProgram(parsed.fileNames, parsed.options);
    const emitted = program.emit();
    const diagnostics = ts.getPreEmitDiagnostics(program).concat(emitted.diagnostics).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    assert.deepEqual(diagnostics, []);
    // The import resolved to the installed package, not to this checkout.
    const resolved = program.getSourceFiles().map((f) => f.fileName).filter((f) => f.includes("@dreb-rs/client"));
    assert.ok(resolved.length > 0 && resolved.every((f) => f.startsWith(installed)), resolved.join("\n"));

    const bin = realDrebBin();
    if (bin) {
      const home = path.join(project, "home");
      const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, DREB_CODING_AGENT_DIR: path.join(home, "agent") };
      delete env.DREB_BIN;
      delete env.DREB_FAUX_SCENARIO;
      // As a newcomer has it after `cargo install`: dreb on PATH.
      env.PATH = `${path.dirname(bin)}${path.delimiter}${process.env.PATH ?? ""}`;
      const printed = execFileSync(process.execPath, ["host.js"], { cwd: project, env, encoding: "utf8", timeout: 60_000 });
      const outcome = JSON.parse(printed) as { seen: string[]; finalText: string; stopReason: string };
      assert.deepEqual(outcome.seen, ["agent_end 4", "refused"]);
      assert.match(outcome.finalText, /faux provider/);
      assert.equal(outcome.stopReason, "stop");
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(project, { recursive: true, force: true });
  }
});
