// The README's examples are tested: each ```ts block right after an `<!-- example: <name> -->` line is written into
// the package (dist/readme-examples/, so `import ... from "@dreb-rs/client"` resolves to this package by its own name),
// type-checked with the package's compiler options, and run with node against the real binary (offline `faux`).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import ts from "typescript";
import { packageRoot, realDrebBin } from "./real-bin.js";

interface Example {
  name: string;
  code: string;
}

function readmeExamples(): Example[] {
  const readme = readFileSync(path.join(packageRoot, "README.md"), "utf8");
  const examples: Example[] = [];
  const pattern = /<!-- example: ([\w-]+) -->\n```ts\n([\s\S]*?)\n```/g;
  for (const match of readme.matchAll(pattern)) examples.push({ name: match[1]!, code: match[2]! + "\n" });
  return examples;
}

const examples = readmeExamples();
const outDir = path.join(packageRoot, "dist", "readme-examples");

function compilerOptions(): ts.CompilerOptions {
  const configPath = path.join(packageRoot, "tsconfig.json");
  const config = ts.readConfigFile(configPath, (file) => ts.sys.readFile(file));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, packageRoot);
  const options: ts.CompilerOptions = { ...parsed.options, noEmit: true, rootDir: outDir, declaration: false, sourceMap: false };
  delete options.outDir;
  return options;
}

test("the README has the RpcClient examples", () => {
  const names = examples.map((e) => e.name);
  assert.ok(names.includes("rpc-client-basic") && names.includes("rpc-client-errors"), names.join(", "));
});

test("the README examples type-check against the built package", () => {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const files = examples.map((e) => {
    const file = path.join(outDir, `${e.name}.ts`);
    writeFileSync(file, e.code);
    return file;
  });
  const program = ts.createProgram(files, compilerOptions());
  const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file ? `${path.basename(d.file.fileName)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}` : "";
    return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`;
  });
  assert.deepEqual(diagnostics, []);
});

const bin = realDrebBin();
for (const example of examples) {
  test(`README example ${example.name} runs against the real agent`, { skip: bin ? false : "no dreb binary" }, async () => {
    mkdirSync(outDir, { recursive: true });
    const js = ts.transpileModule(example.code, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    }).outputText;
    const file = path.join(outDir, `${example.name}.js`);
    writeFileSync(file, js);
    const home = mkdtempSync(path.join(tmpdir(), "dreb-readme-"));
    try {
      const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = execFile(
          process.execPath,
          [file],
          {
            cwd: home,
            env: { ...process.env, DREB_BIN: bin, HOME: home, DREB_CODING_AGENT_DIR: path.join(home, "agent") },
            timeout: 60_000,
          },
          (_error, out, err) => resolve({ code: child.exitCode, stdout: out, stderr: err }),
        );
      });
      assert.equal(code, 0, `exit ${code}\nstdout:\n${stdout}\nstderr:\n${stderr}`);
      assert.ok(stdout.length > 0);
      if (example.name === "rpc-client-basic") {
        assert.match(stdout, /\[ls\]/);
        assert.match(stdout, /last reply: .*faux provider/);
      }
      if (example.name === "rpc-client-errors") {
        assert.match(stdout, /events, the last one agent_end/);
        assert.match(stdout, /refused: Built-in slash command \/fork must be handled by the RPC client/);
      }
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
}
