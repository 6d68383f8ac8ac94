//! Serving commands: the `RpcHandler` trait (one async method per command) and the blanket `CommandService` impl
//! that `dispatch` drives.

use dreb_codegen_core::ir::CommandResult;
use proc_macro2::TokenStream;
use quote::quote;

use crate::commands::RequestList;
use crate::context::{Ctx, Paths};
use crate::docs::Doc;

/// `RpcHandler`, `CommandService` and the impl of the latter for every `RpcHandler`, for the commands in `list`.
pub fn handler(ctx: &Ctx, list: &RequestList) -> TokenStream {
    let Paths { result, string, .. } = &ctx.p;
    let (send, sync, future, request_context) = (
        ctx.path("Send"),
        ctx.path("Sync"),
        ctx.path("Future"),
        ctx.path("RequestContext"),
    );
    let methods = list
        .requests
        .iter()
        .zip(&list.methods)
        .zip(&list.params)
        .map(|((c, m), p)| {
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
            quote! {
                #doc
                fn #m(&self, ctx: &#request_context, params: #p)
                    -> impl #future<Output = #result<#out, #string>> + #send;
            }
        });
    let calls = list
        .requests
        .iter()
        .zip(&list.variants)
        .zip(&list.methods)
        .map(|((c, v), m)| match c.result {
            CommandResult::None => {
                quote!(Command::#v(p) => self.#m(ctx, p).await.map(|()| ResponseData::#v),)
            }
            CommandResult::Data { .. } => {
                quote!(Command::#v(p) => self.#m(ctx, p).await.map(ResponseData::#v),)
            }
        });
    let none = list
        .requests
        .is_empty()
        .then(|| quote!(_ => { let _ = ctx; unreachable!() }));
    quote! {
        /// One async method per command. Implement it and pass it to `dispatch`: every method returns the
        /// command's result or an error text, written as `success: false` with exactly that text.
        ///
        /// Methods are `fn ... -> impl Future + Send` (native async in traits, generic dispatch); implement
        /// them with `async fn`. See `docs/adr/0001-rust-codegen-shape.md`.
        pub trait RpcHandler: #send + #sync {
            #(#methods)*
        }

        /// The lower-level service `dispatch` drives: one call per decoded command. Every [`RpcHandler`] is
        /// one; implement it directly to serve commands generically (proxies, recorders, replaying test
        /// doubles).
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
