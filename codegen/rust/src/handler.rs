//! Serving commands: one handler trait per spec group (`<Group>Handler`, one async method per command of the
//! group, each returning the command's typed error from [`crate::errors`]), `RpcHandler` (every group trait
//! together), the `handlers` module that re-exports the group traits, and the blanket `CommandService` impl that
//! `dispatch` drives. See `docs/adr/0014-group-handler-traits.md`.

use dreb_codegen_core::ir::{Command, CommandResult, pascal_case};
use proc_macro2::{Ident, TokenStream};
use quote::quote;

use crate::commands::RequestList;
use crate::context::{Ctx, Paths};
use crate::docs::Doc;
use crate::errors::error_type;
use crate::names::{dedupe, ident};

/// The group of a command without `group:`.
const NO_GROUP: &str = "Other";

/// One spec group: its trait and its commands (indices into the request list), in spec order.
struct Group<'a> {
    name: &'a str,
    ident: Ident,
    members: Vec<usize>,
}

/// The groups in order of their first command; trait names are unique (`Queue modes` → `QueueModesHandler`).
fn groups<'a>(requests: &'a [Command]) -> Vec<Group<'a>> {
    let mut out: Vec<(&'a str, Vec<usize>)> = Vec::new();
    for (i, c) in requests.iter().enumerate() {
        let name = c.group.as_deref().unwrap_or(NO_GROUP);
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some((_, members)) => members.push(i),
            None => out.push((name, vec![i])),
        }
    }
    let names = dedupe(
        out.iter()
            .map(|(n, _)| {
                let mut s = pascal_case(n);
                s.retain(|c| c.is_ascii_alphanumeric());
                format!("{s}Handler")
            })
            .collect(),
        &["RpcHandler"],
    );
    out.into_iter()
        .zip(names)
        .map(|((name, members), trait_name)| Group {
            name,
            ident: ident(&trait_name),
            members,
        })
        .collect()
}

/// The group traits, `RpcHandler`, `handlers`, `CommandService` and the impl of the latter for every
/// `RpcHandler`, for the commands in `list`.
pub fn handler(ctx: &Ctx, list: &RequestList) -> TokenStream {
    let Paths { result, string, .. } = &ctx.p;
    let (send, sync, future, request_context, boxed) = (
        ctx.path("Send"),
        ctx.path("Sync"),
        ctx.path("Future"),
        ctx.path("RequestContext"),
        ctx.path("Box"),
    );
    let groups = groups(list.requests);
    let traits = groups.iter().map(|g| {
        let methods = g.members.iter().map(|&i| {
            let (c, m, p) = (&list.requests[i], &list.methods[i], &list.params[i]);
            let mut doc = Doc::new().md(c.doc.as_deref());
            if !c.errors.is_empty() {
                doc = doc.para(Some("Error texts:"));
                for e in &c.errors {
                    let item = match &e.when {
                        Some(w) => format!("- `{}`: {}", e.text.trim(), w.trim()),
                        None => format!("- `{}`", e.text.trim()),
                    };
                    doc = doc.md(Some(&item));
                }
            }
            let out = RequestList::output_type(ctx, &c.result);
            let error = ident(&error_type(c));
            quote! {
                #doc
                fn #m(&self, ctx: &#request_context, params: #p)
                    -> impl #future<Output = #result<#out, errors::#error>> + #send;
            }
        });
        let (name, doc) = (
            &g.ident,
            format!(
                " The commands of the spec group `{}`: one async method each, returning the command's result or its \
                 typed error.",
                g.name
            ),
        );
        quote! {
            #[doc = #doc]
            pub trait #name: #send + #sync {
                #(#methods)*
            }
        }
    });
    let names: Vec<&Ident> = groups.iter().map(|g| &g.ident).collect();
    // A spec without commands has no group: every value is a (commandless) handler.
    let bound = if names.is_empty() {
        quote!(#send + #sync)
    } else {
        quote!(#(#names)+*)
    };
    let trait_of: Vec<&Ident> = {
        let mut of = vec![None; list.requests.len()];
        for g in &groups {
            for &i in &g.members {
                of[i] = Some(&g.ident);
            }
        }
        of.into_iter().flatten().collect()
    };
    let calls = list
        .requests
        .iter()
        .zip(&list.variants)
        .zip(&list.methods)
        .zip(&trait_of)
        // Each handler's future is boxed: awaited inline, `call`'s future would be as large as the largest
        // handler's (11.8 KB for the runtime), and the server moves it into a box for every command.
        .map(|(((c, v), m), t)| match c.result {
            CommandResult::None => quote! {
                Command::#v(p) => #boxed::pin(#t::#m(self, ctx, p))
                    .await
                    .map(|()| ResponseData::#v)
                    .map_err(|e| e.wire_text()),
            },
            CommandResult::Data { .. } => quote! {
                Command::#v(p) => #boxed::pin(#t::#m(self, ctx, p))
                    .await
                    .map(ResponseData::#v)
                    .map_err(|e| e.wire_text()),
            },
        });
    let none = list
        .requests
        .is_empty()
        .then(|| quote!(_ => { let _ = ctx; unreachable!() }));
    quote! {
        #(#traits)*

        /// Every command: the group traits together, implemented for every type that implements all of them.
        /// Implement each group's trait and pass the value to `dispatch`, which writes a method's result as
        /// `success: true` and its error as `success: false` with the error's `wire_text()`.
        ///
        /// Methods are `fn ... -> impl Future + Send` (native async in traits, generic dispatch); implement
        /// them with `async fn`. See `docs/adr/0001-rust-codegen-shape.md` and
        /// `docs/adr/0014-group-handler-traits.md`.
        pub trait RpcHandler: #bound {}

        impl<H: #bound> RpcHandler for H {}

        /// The group handler traits, to bring every command method into scope at once
        /// (`use dreb_protocol::handlers::*`).
        pub mod handlers {
            // Unused where the generated module is private and no caller imports the traits from here.
            #[allow(unused_imports)]
            pub use super::{#(#names),*};
        }

        /// The lower-level service `dispatch` drives: one call per decoded command, answered with the result
        /// or the exact error text. Every [`RpcHandler`] is one; implement it directly to serve commands
        /// generically (proxies, recorders, replaying test doubles).
        pub trait CommandService: #send + #sync {
            /// Runs one command.
            fn call(&self, ctx: &#request_context, command: Command)
                -> impl #future<Output = #result<ResponseData, #string>> + #send;
        }

        impl<H: RpcHandler> CommandService for H {
            async fn call(&self, ctx: &#request_context, command: Command) -> #result<ResponseData, #string> {
                match command {
                    #(#calls)*
                    #none
                }
            }
        }
    }
}
