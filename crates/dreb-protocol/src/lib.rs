//! Generated protocol types, the RpcHandler trait and dispatch, and JSONL framing
