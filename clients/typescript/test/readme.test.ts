// The README's examples are tested, and the repository README's TypeScript host: each ```ts block right after an
// `<!-- example: <name> -->` line is written into the package (dist/readme-examples/, so `import ... from
// "@dreb-rs/client"` resolves to this package by its own name), type-checked with the package's compiler options and
// with a plain `--strict` set (what a typical host compiles with), and run with node against the real binary (offline
// `faux`); each must print what it says it does.
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
  // The repository README's TypeScript host (its only ts block), which the fresh-clone check runs too.
  const top = readFileSync(path.join(packageRoot, "..", "..", "README.md"), "utf8");
  const blocks = [...top.matchAll(/```ts\n([\s\S]*?)\n```/g)];
  if (blocks.length === 1) examples.push({ name: "repository-readme", code: blocks[0]![1]! + "\n" });
  return examples;
}

const examples = readmeExamples();
const outDir = path.join(packageRoot, "dist", "readme-examples");

/** The package's own compiler options (strict plus its extra flags). */
function packageCompilerOptions(): ts.CompilerOptions {
  const configPath = path.join(packageRoot, "tsconfig.json");
  const config = ts.readConfigFile(configPath, (file) => ts.sys.readFile(file));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, packageRoot);
  const options: ts.CompilerOptions = { ...parsed.options, noEmit: true, rootDir: outDir, declaration: false, sourceMap: false };
  delete options.outDir;
  return options;
}

/** A host's plain `tsc --strict` with Node's ESM resolution, nothing else. */
function plainStrictOptions(): ts.CompilerOptions {
  const config = { compilerOptions: { strict: true, target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", noEmit: true } };
  return ts.parseJsonConfigFileContent(config, ts.sys, packageRoot).options;
}

/** What each example must print when it runs (the faux provider's replies are fixed). */
const EXPECTED: Record<string, RegExp[]> = {
  host: [
    /\[tool ask_user\]/,
    /\[asked "Which database\?", answering SQLite\]/,
    /^final text: Noted: your answer\.$/m,
    /^stop reason: stop \| output tokens: \d+$/m,
    /^refused \(prompt\): Built-in slash command \/fork must be handled by the RPC client/m,
    /^messages: 4$/m,
  ],
  narrowing: [/^update text_delta$/m, /^agent_end: 4 messages$/m],
  "repository-readme": [/^.*faux provider.*\n4$/m],
  "rpc-client-basic": [/\[ls\]/, /last reply: .*faux provider/],
  "rpc-client-errors": [/events, the last one agent_end/, /refused: Built-in slash command \/fork must be handled by the RPC client/],
};

test("the README has the examples", () => {
  assert.deepEqual(examples.map((e) => e.name).sort(), Object.keys(EXPECTED).sort());
});

function writeExamples(): string[] {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  return examples.map((e) => {
    const file = path.join(outDir, `${e.name}.ts`);
    writeFileSync(file, e.code);
    return file;
  });
}

function diagnostics(files: string[], options: ts.CompilerOptions): string[] {
  const program = ts.createProgram(files, options);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file ? `${path.basename(d.file.fileName)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}` : "";
    return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`;
  });
}

test("the README examples type-check against the built package (the package's compiler options)", () => {
  assert.deepEqual(diagnostics(writeExamples(), packageCompilerOptions()), []);
});

test("the README examples type-check against the built package under plain tsc --strict", () => {
  assert.deepEqual(diagnostics(writeExamples(), plainStrictOptions()), []);
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
    // TMPDIR: what the example makes in the temp dir goes inside `home`, which is removed below.
    const env: NodeJS.ProcessEnv = { ...process.env, DREB_BIN: bin, HOME: home, TMPDIR: home, DREB_CODING_AGENT_DIR: path.join(home, "agent") };
    delete env.DREB_FAUX_SCENARIO;
    try {
      const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = execFile(
          process.execPath,
          [file],
          {
            cwd: home,
            env,
            timeout: 60_000,
          },
          (_error, out, err) => resolve({ code: child.exitCode, stdout: out, stderr: err }),
        );
      });
      assert.equal(code, 0, `exit ${code}\nstdout:\n${stdout}\nstderr:\n${stderr}`);
      for (const pattern of EXPECTED[example.name] ?? []) assert.match(stdout, pattern);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
}
