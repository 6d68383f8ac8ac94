// The dreb binary the real-agent tests drive: $DREB_BIN, else this checkout's target/debug/dreb if it was built.
import { accessSync, constants } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The package root (clients/typescript); the tests run from dist/test/. */
export const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The binary to test, or `""` when there is none (the tests skip). */
export function realDrebBin(): string {
  const fromEnv = process.env.DREB_BIN;
  if (fromEnv) return path.resolve(fromEnv);
  const built = path.resolve(packageRoot, "../../target/debug/dreb");
  return executable(built) ? built : "";
}
