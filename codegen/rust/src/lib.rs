//! The Rust backend of dreb-codegen: emits the protocol module that `crates/dreb-protocol/build.rs` writes to
//! `OUT_DIR/protocol.rs` and the crate `include!`s. See `docs/adr/0001-rust-codegen-shape.md` for the shape and
//! `docs/adr/0005-quote-rust-emitter.md` for how it is built.
//!
//! Code is built as `proc_macro2` tokens with `quote!`, parsed as a `syn::File` (so the output is checked to be
//! valid Rust) and printed by `prettyplease`. The output relies on `crate::support` (hand-written in
//! dreb-protocol: `Tristate`, `JsNumber`, the frame writer, and the generic serde helpers and `macro_rules!` that
//! keep per-type boilerplate out of the generated module) and names `serde`, `serde_json`, `indexmap` by absolute
//! path.
//!
//! One module per part of the output: [`context`] (shared state, type expressions), [`names`], [`docs`],
//! [`structs`], [`enums`], [`unions`] (tagged unions, `Event`, `oneOf`), [`messages`] (events and inputs),
//! [`commands`] (commands and calls: params, request and result enums, `CommandSpec`/`CallSpec`), [`handler`]
//! (`RpcHandler`, `CommandService`), [`errors`] (typed per-command errors), [`module`] (constants, wire names, error texts, conformance, const markers).
//!
//! The output can be split in two ([`selection`]): [`generate_types`] emits only a selection of the shared types
//! (the data-model crate `dreb-types`, no RPC), and [`generate_protocol`] the protocol module without them, which
//! re-exports them from that crate; [`generate`] emits everything in one module (fixtures, the extension protocol).

pub mod commands;
pub mod context;
pub mod docs;
pub mod enums;
pub mod errors;
pub mod handler;
pub mod messages;
pub mod module;
pub mod names;
pub mod selection;
pub mod structs;
pub mod unions;

use dreb_codegen_core::ir::{Ir, TypeDef, TypeKind};
use dreb_codegen_core::{BANNER, banner_comment_of};
use proc_macro2::TokenStream;
use quote::quote;

use crate::context::{Ctx, Part};
use crate::docs::Doc;
use crate::messages::Role;
use crate::names::ident;
pub use crate::selection::{Selection, UnknownRoot};
use crate::structs::{StructSpec, struct_def};

/// The emitted tokens do not parse as a Rust file: a bug of this backend, never of the spec.
#[derive(Debug)]
pub struct GenerateError(pub syn::Error);

impl std::fmt::Display for GenerateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the Rust backend emitted invalid Rust (a generator bug): {}",
            self.0
        )
    }
}

impl std::error::Error for GenerateError {}

/// Emits the Rust protocol module for `ir` (one file's contents, starting with the `rpc.yaml` banner).
pub fn generate(ir: &Ir) -> Result<String, GenerateError> {
    generate_with_banner(ir, BANNER)
}

/// Like [`generate`], with another spec's banner (one of `dreb_codegen_core::BANNERS`).
pub fn generate_with_banner(ir: &Ir, banner: &str) -> Result<String, GenerateError> {
    print(ir, banner, Part::Whole)
}

/// The data-model module: only the shared types in `selection` (with their `const` markers), no RPC. Its
/// crate's `support` module provides what [`generate`]'s does minus `RequestContext` and the frame helpers.
pub fn generate_types(ir: &Ir, selection: &Selection) -> Result<String, GenerateError> {
    print(ir, BANNER, Part::Types(selection))
}

/// The protocol module without the shared types in `selection`, which it re-exports from the crate at `from`
/// (`::dreb_types`), the module [`generate_types`] emits for the same selection: one definition of each.
pub fn generate_protocol(
    ir: &Ir,
    selection: &Selection,
    from: &str,
) -> Result<String, GenerateError> {
    print(
        ir,
        BANNER,
        Part::Protocol {
            types: selection,
            from,
        },
    )
}

fn print(ir: &Ir, banner: &str, part: Part) -> Result<String, GenerateError> {
    let tokens = match part {
        Part::Types(_) => types_tokens(ir, part),
        _ => part_tokens(ir, part),
    };
    let file = syn::parse2::<syn::File>(tokens).map_err(GenerateError)?;
    let mut out = banner_comment_of(banner, "//");
    let what = match part {
        Part::Types(_) => "The shared data types (a selection of `types:`)",
        _ => "Types, wire names, the RpcHandler trait and dispatch",
    };
    out.push_str(&format!(
        "//\n// Protocol {} version {}. {what}.\n",
        ir.protocol.name, ir.protocol.version
    ));
    out.push_str(&print_items(file));
    Ok(out)
}

/// Every item of the whole module, in output order.
pub fn module_tokens(ir: &Ir) -> TokenStream {
    part_tokens(ir, Part::Whole)
}

/// The types `ctx` defines, in spec order.
fn defined_types(ctx: &Ctx, ir: &Ir) -> TokenStream {
    ir.types
        .iter()
        .filter(|t| ctx.defines(&t.name))
        .map(|t| type_def(ctx, t))
        .collect()
}

/// The selected types, then their `const` markers.
fn types_tokens(ir: &Ir, part: Part) -> TokenStream {
    let ctx = Ctx::for_part(ir, part);
    let header = module::header(&ctx);
    let types = defined_types(&ctx, ir);
    let consts = module::consts(&ctx);
    quote!(#header #types #consts)
}

/// Every item of a protocol module (whole, or without the types another crate defines), in output order.
fn part_tokens(ir: &Ir, part: Part) -> TokenStream {
    let ctx = Ctx::for_part(ir, part);
    let header = module::header(&ctx);
    let wire = module::wire_names(&ctx);
    let errors = module::error_texts(&ctx);
    let types = defined_types(&ctx, ir);
    let commands = commands::commands(&ctx);
    let calls = commands::calls(&ctx);
    let command_errors = errors::errors(&ctx);
    let events = messages::messages(&ctx, Role::Event);
    let inputs = messages::messages(&ctx, Role::Input);
    let conformance = module::conformance(&ctx);
    // Last: struct emission above registered the const markers.
    let consts = module::consts(&ctx);
    quote! {
        #header #wire #errors #types #commands #calls #command_errors #events #inputs #conformance #consts
    }
}

fn type_def(ctx: &Ctx, t: &TypeDef) -> TokenStream {
    let doc = Doc::with_notes(t.doc.as_deref(), t.since.as_deref(), t.note.as_deref());
    match &t.kind {
        TypeKind::Struct(s) => struct_def(
            ctx,
            &StructSpec {
                name: &t.name,
                doc,
                fields: &s.fields,
                additional: s.additional_fields,
                shared: true,
            },
        ),
        TypeKind::Enum(e) => enums::enum_def(ctx, t, e, doc),
        TypeKind::Union(u) => unions::union_def(ctx, t, u, doc),
        TypeKind::OneOf(o) => unions::one_of_def(ctx, t, o, doc),
        TypeKind::Alias(a) => {
            let (name, ty) = (ident(&t.name), ctx.rust_type(a, false));
            quote!(#doc pub type #name = #ty;)
        }
    }
}

/// Prints the file with an empty line between top-level items; runs of `use` items, and of invocations of the
/// same macro, stay together.
fn print_items(file: syn::File) -> String {
    let mut out = String::new();
    let mut prev: Option<String> = None;
    for item in file.items {
        let group = match &item {
            syn::Item::Use(_) => Some("use".to_string()),
            syn::Item::Macro(m) => Some(
                m.mac
                    .path
                    .segments
                    .iter()
                    .map(|s| s.ident.to_string())
                    .collect::<Vec<_>>()
                    .join("::"),
            ),
            _ => None,
        };
        if group.is_none() || group != prev {
            out.push('\n');
        }
        prev = group;
        out.push_str(&prettyplease::unparse(&syn::File {
            shebang: None,
            attrs: Vec::new(),
            items: vec![item],
        }));
    }
    out
}
