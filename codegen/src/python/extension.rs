//! The Python types of the extension protocol: `clients/python/src/dreb_extension/_protocol.py`, for the
//! hand-written extension SDK beside it (no client class). The same type emission as the RPC module: a
//! `TypedDict` per struct, `Literal` aliases for enums, union aliases; per call and per command its params
//! (`<Name>Params`, also when empty), its request frame (`<Name>Call` / `<Name>Command`) and its success response
//! (`<Name>Response`, whose `data` is the result type); the events; and the tuples of call, command and event
//! names. Also `clients/python/tests/_generated_extension_examples.py`, every example of the spec typed.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::{
    Names, RequestSet, docstring, examples_module, py_str, write_all, write_events, write_inputs,
    write_requests, write_shared_types,
};
use crate::{EXTENSION_BANNER, GeneratedFile, Ir, banner_comment_of};

/// The generated module, relative to the repository root.
pub const OUT_PATH: &str = "clients/python/src/dreb_extension/_protocol.py";

/// Every example of the spec as a typed constant (checked by `mypy --strict` in `clients/python/tests`).
pub const EXAMPLES_PATH: &str = "clients/python/tests/_generated_extension_examples.py";

/// Runs the backend.
pub fn generate(ir: &Ir) -> Vec<GeneratedFile> {
    vec![
        GeneratedFile {
            path: PathBuf::from(OUT_PATH),
            contents: module(ir),
        },
        GeneratedFile {
            path: PathBuf::from(EXAMPLES_PATH),
            contents: examples_module(
                ir,
                &banner_comment_of(EXTENSION_BANNER, "#"),
                "from dreb_extension import _protocol as T",
            ),
        },
    ]
}

fn module(ir: &Ir) -> String {
    let names = Names::new(ir);
    let mut out = banner_comment_of(EXTENSION_BANNER, "#");
    let mut header = vec![format!(
        "Types of the {} protocol, version {}.",
        ir.protocol.name, ir.protocol.version
    )];
    if let Some(doc) = &ir.protocol.doc {
        header.push(doc.clone());
    }
    docstring(&mut out, "", &header);
    out.push_str("\nfrom __future__ import annotations\n\n");
    out.push_str(
        "from typing import Any, Literal, NotRequired, TypeAlias, TypedDict, TypeGuard\n\n",
    );
    let _ = writeln!(
        out,
        "#: Protocol name (`protocol.name`).\nPROTOCOL_NAME = {}\n#: Protocol revision (`protocol.version`).\nPROTOCOL_VERSION = {}\n",
        py_str(&ir.protocol.name),
        py_str(&ir.protocol.version)
    );
    out.push_str("#: A request id: chosen by the sender of the request; its response echoes it.\n");
    out.push_str("RequestId: TypeAlias = \"str | int\"\n");

    let mut all: Vec<String> = ["PROTOCOL_NAME", "PROTOCOL_VERSION", "RequestId"]
        .map(String::from)
        .into();
    all.extend(write_shared_types(&mut out, ir));
    let calls = RequestSet {
        requests: &ir.calls,
        title: "Calls (requests the runtime sends; the extension answers each with a response)",
        frame: "Call",
        every_params: true,
        error_response: Some(
            "A failure response to any call or command (`success: false`); `error` is the exact error text.",
        ),
        union: ("RpcCall", "Every call the runtime can send."),
        responses: (
            "RpcCallResponse",
            "Every response to a call (what the extension writes).",
        ),
        wire_names: ("CALL_TYPES", "The wire names of every call, in spec order."),
    };
    all.extend(write_requests(&mut out, &names, &calls));
    let commands = RequestSet {
        requests: &ir.commands,
        title: "Commands (requests the extension sends; the runtime answers each with a response)",
        frame: "Command",
        every_params: true,
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
    };
    all.extend(write_requests(&mut out, &names, &commands));
    let example = ir.events.first().map_or("event", |e| e.name.as_str());
    all.extend(write_events(
        &mut out,
        ir,
        &names,
        "Events (notifications the runtime sends; they get no response)",
        example,
    ));
    if !ir.inputs.is_empty() {
        all.extend(write_inputs(&mut out, ir, &names));
    }
    write_all(&mut out, &all);
    out
}
