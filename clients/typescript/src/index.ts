export { JsonlDecoder, encodeFrame } from "./jsonl.js";
export { RpcClientError, RpcError, RpcTimeoutError, RpcClosedError, type FailureResponseFrame } from "./errors.js";
export { StreamTransport, type RpcTransport, type TransportHandlers, type TransportCloseInfo } from "./transport.js";
export { ProcessTransport, SpawnError, resolveDrebBinary, type ProcessTransportOptions } from "./process-transport.js";
export { DEFAULT_REQUEST_TIMEOUT_MS, LONG_COMMAND_TIMEOUT_MS, COMMAND_TIMEOUTS_MS, defaultTimeoutFor } from "./timeouts.js";
export {
  RpcConnection,
  type RpcFrame,
  type OutgoingFrame,
  type ResponseFrame,
  type RequestOptions,
  type WaitForIdleOptions,
  type ConnectionOptions,
} from "./connection.js";
export { summarizeRun, type RunResult } from "./run.js";
export * from "./generated/types.js";
export { DrebClient } from "./generated/client.js";
export {
  RpcClient,
  type RpcClientOptions,
  type ModelInfo,
  type RpcEventListener,
  type RpcExitInfo,
  type RpcExitListener,
  type RpcUnmatchedResponseListener,
  type RpcCommandType,
  type RpcDashboardSnapshotBarrierEvent,
  type RpcExtensionUIRequest,
  type RpcExtensionUIResponse,
  type RpcRequestOptions,
  type RpcPromptOptions,
  type RpcWaitOptions,
  type RpcNavigateTreeOptions,
} from "./rpc-client.js";
