//! The TypeScript types of the extension protocol: `clients/extension-host/src/generated/protocol.ts`, for the
//! extension host (types only, no client). The same type emission as the RPC types file; per call and per command
//! its params, request frame (`<Name>Call` / `<Name>Command`) and success response (`<Name>Response`), the
//! unions, the wire names (`CALL_TYPES`, `COMMAND_TYPES`, `EVENT_TYPES`) and the maps from name to params and
//! result (`CallMap`, `CommandMap`).

use std::path::PathBuf;

use super::{
    Names, RequestSet, Side, write_messages, write_preamble, write_requests, write_shared_types,
};
use crate::{EXTENSION_BANNER, GeneratedFile, Ir, banner_comment_of};

/// The generated file, relative to the repository root.
pub const OUT_PATH: &str = "clients/extension-host/src/generated/protocol.ts";

/// Runs the backend.
pub fn generate(ir: &Ir) -> Vec<GeneratedFile> {
    vec![GeneratedFile {
        path: PathBuf::from(OUT_PATH),
        contents: types_file(ir),
    }]
}

fn types_file(ir: &Ir) -> String {
    let names = Names::new(ir);
    let mut out = banner_comment_of(EXTENSION_BANNER, "//");
    write_preamble(
        &mut out,
        ir,
        "A request id: chosen by the sender of the request; its response echoes it.",
    );
    write_shared_types(&mut out, ir);
    let calls = RequestSet {
        requests: &ir.calls,
        title: "Calls (requests the runtime sends; the extension answers each with a response)",
        frame: "Call",
        error_response: Some(
            "A failure response to any call or command (`success: false`); `error` is the exact error text.",
        ),
        union: ("RpcCall", "Every call the runtime can send."),
        responses: (
            "RpcCallResponse",
            "Every response to a call (what the extension writes).",
        ),
        wire_names: ("CALL_TYPES", "The wire names of every call, in spec order."),
        wire_type: "CallType",
        map: (
            "CallMap",
            "Per call: its params object and the type of its success `data` (`void`: no `data`).",
        ),
    };
    write_requests(&mut out, &names, &calls);
    let commands = RequestSet {
        requests: &ir.commands,
        title: "Commands (requests the extension sends; the runtime answers each with a response)",
        frame: "Command",
        error_response: None,
        union: ("RpcCommand", "Every command an extension can send."),
        responses: (
            "RpcResponse",
            "Every response to a command (what the runtime writes).",
        ),
        wire_names: (
            "COMMAND_TYPES",
            "The wire names of every command, in spec order.",
        ),
        wire_type: "CommandType",
        map: (
            "CommandMap",
            "Per command: its params object and the type of its success `data` (`void`: no `data`).",
        ),
    };
    write_requests(&mut out, &names, &commands);
    write_messages(
        &mut out,
        ir,
        &names,
        Side::Event {
            title: "Events (notifications the runtime sends; they get no response)",
            example: ir.events.first().map_or("event", |e| e.name.as_str()),
        },
    );
    if !ir.inputs.is_empty() {
        write_messages(&mut out, ir, &names, Side::Input);
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}
