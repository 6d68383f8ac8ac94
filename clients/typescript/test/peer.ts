// The agent side of an in-memory connection, shared by the connection-level tests.
import { PassThrough } from "node:stream";
import { JsonlDecoder } from "../src/index.js";

/** The agent side of an in-memory connection: reads the client's frames, writes raw bytes back. */
export class Peer {
  readonly toClient = new PassThrough();
  readonly fromClient = new PassThrough();
  private readonly decoder = new JsonlDecoder();
  private readonly received: Record<string, unknown>[] = [];
  private waiting: ((frame: Record<string, unknown>) => void) | undefined;

  constructor() {
    this.fromClient.on("data", (chunk: Buffer) => {
      for (const record of this.decoder.push(chunk)) {
        const frame = JSON.parse(record) as Record<string, unknown>;
        if (this.waiting) {
          const w = this.waiting;
          this.waiting = undefined;
          w(frame);
        } else this.received.push(frame);
      }
    });
  }

  /** The next frame the client sent. */
  next(): Promise<Record<string, unknown>> {
    const frame = this.received.shift();
    if (frame) return Promise.resolve(frame);
    return new Promise((resolve) => (this.waiting = resolve));
  }

  /** Writes raw text in one chunk. */
  write(text: string | Uint8Array): void {
    this.toClient.write(text);
  }

  /** Writes one frame. */
  send(value: unknown): void {
    this.write(this.line(value));
  }

  line(value: unknown): string {
    return JSON.stringify(value) + "\n";
  }
}
