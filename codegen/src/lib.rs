//! Protocol code generator: `protocol/rpc.yaml` → typed IR → backends.
