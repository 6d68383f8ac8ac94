export { JsonlDecoder, encodeFrame } from "./jsonl.js";
export { RpcClientError, RpcError, RpcTimeoutError, RpcClosedError, type FailureResponseFrame } from "./errors.js";
export { StreamTransport, type RpcTransport, type TransportHandlers, type TransportCloseInfo } from "./transport.js";
export { ProcessTransport, SpawnError, type ProcessTransportOptions } from "./process-transport.js";
export {
  RpcConnection,
  type RpcFrame,
  type OutgoingFrame,
  type ResponseFrame,
  type RequestOptions,
  type WaitForIdleOptions,
  type ConnectionOptions,
} from "./connection.js";
export * from "./generated/types.js";
export { DrebClient } from "./generated/client.js";
