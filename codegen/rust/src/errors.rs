//! `errors`: one enum per command (and call), `<Command>Error`, with one variant per text listed under its
//! `errors:` (named by the entry's `name:` or derived from its text), `{placeholder}`s as `String` fields, and a
//! catch-all `Unexpected(String)`; a command that lists no errors gets the enum with only `Unexpected`, so every
//! handler method returns a typed error. See `docs/adr/0006-typed-command-errors.md`.
//!
//! A listed text that is the envelope's `commandFailed` template around a message (`Command failed: Already
//! compacted`) is a failure the reference *throws*: its variant displays the inner message (`Already compacted`)
//! and says `prefixed() == true`; `wire_text()` wraps it with `error_text::COMMAND_FAILED`. So the prefix is
//! written once, in the envelope template, and each message once, in its variant.

use dreb_codegen_core::ir::{Command, CommandError, TextPart, UNEXPECTED_ERROR_NAME, text_parts};
use proc_macro2::TokenStream;
use quote::quote;

use crate::context::Ctx;
use crate::names::{field_name, ident};

/// The `errors` module: one enum per command and call.
pub fn errors(ctx: &Ctx) -> TokenStream {
    let ir = ctx.ir;
    let enums: TokenStream = ir
        .commands
        .iter()
        .map(|c| ("command", c))
        .chain(ir.calls.iter().map(|c| ("call", c)))
        .map(|(role, c)| error_enum(ctx, role, c))
        .collect();
    quote! {
        /// Typed errors of each command (and call), from its `errors:` in the spec: `Display` is the listed text
        /// with its placeholders filled (without the `commandFailed` wrapping for texts the reference throws),
        /// `prefixed()` says whether the wire text is wrapped, `wire_text()` is the exact text of the response.
        pub mod errors { #enums }
    }
}

/// The name of a command's (or call's) error enum in the `errors` module: `<Command>Error`.
pub fn error_type(c: &Command) -> String {
    format!("{}Error", c.pascal_name())
}

fn doc_text(text: &str) -> String {
    text.replace('\n', "\\n")
}

fn error_enum(ctx: &Ctx, role: &str, c: &Command) -> TokenStream {
    let name = ident(&error_type(c));
    let doc = if c.errors.is_empty() {
        format!(
            " The errors of the `{}` {role}, which lists none: only [`{name}::{UNEXPECTED_ERROR_NAME}`].",
            c.name
        )
    } else {
        format!(
            " The errors of the `{}` {role}, as listed under its `errors:`, plus [`{name}::{UNEXPECTED_ERROR_NAME}`].",
            c.name
        )
    };
    let unexpected = ident(UNEXPECTED_ERROR_NAME);
    let variants: Vec<Variant> = c.errors.iter().map(|e| Variant::new(ctx, e)).collect();

    let defs = variants.iter().map(|v| {
        let (vname, fields) = (&v.ident, &v.fields);
        let mut docs = vec![format!(" `{}`", doc_text(&v.error.text))];
        if let Some(when) = &v.error.when {
            docs.push(String::new());
            docs.extend(when.lines().map(|l| format!(" {l}")));
        }
        if fields.is_empty() {
            quote!(#(#[doc = #docs])* #vname,)
        } else {
            quote!(#(#[doc = #docs])* #vname { #(#fields: ::std::string::String),* },)
        }
    });
    let prefixed = variants.iter().map(|v| {
        let (pat, p) = (v.pattern(), v.thrown.is_some());
        quote!(#pat => #p,)
    });
    let display = variants.iter().map(|v| {
        let pat = v.bind_pattern();
        let writes = text_parts(v.thrown.as_deref().unwrap_or(&v.error.text))
            .into_iter()
            .map(|part| match part {
                TextPart::Literal(l) => quote!(f.write_str(#l)?;),
                TextPart::Placeholder(p) => {
                    let field = ident(&field_name(&p));
                    quote!(f.write_str(#field)?;)
                }
            });
        quote!(#pat => { #(#writes)* })
    });
    let unexpected_doc = format!(
        " A failure the spec does not list for `{}`: answered with `commandFailed` around the message.",
        c.name
    );
    let from_doc = format!(" [`{name}::wire_text`].");
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum #name {
            #(#defs)*
            #[doc = #unexpected_doc]
            #unexpected(::std::string::String),
        }

        impl #name {
            /// A failure the spec does not list ([`Self::Unexpected`]).
            pub fn unexpected(message: impl ::std::fmt::Display) -> Self {
                Self::#unexpected(message.to_string())
            }

            /// `true` when the text as listed in the spec is the envelope's `commandFailed` text around this
            /// error's `Display` (the reference throws it); `false` when it is sent as it is.
            pub fn prefixed(&self) -> bool {
                match self {
                    #(#prefixed)*
                    Self::#unexpected(_) => true,
                }
            }

            /// The exact `error` text of the response.
            pub fn wire_text(&self) -> ::std::string::String {
                if self.prefixed() {
                    super::error_text::COMMAND_FAILED.replace("{message}", &self.to_string())
                } else {
                    self.to_string()
                }
            }
        }

        impl ::std::fmt::Display for #name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                match self {
                    #(#display)*
                    Self::#unexpected(message) => f.write_str(message)?,
                }
                ::std::result::Result::Ok(())
            }
        }

        impl ::std::error::Error for #name {}

        impl ::std::convert::From<#name> for ::std::string::String {
            #[doc = #from_doc]
            fn from(e: #name) -> Self {
                e.wire_text()
            }
        }
    }
}

struct Variant<'a> {
    error: &'a CommandError,
    ident: proc_macro2::Ident,
    fields: Vec<proc_macro2::Ident>,
    /// The message inside `commandFailed`, for a thrown text.
    thrown: Option<String>,
}

impl<'a> Variant<'a> {
    fn new(ctx: &Ctx, error: &'a CommandError) -> Self {
        let env = &ctx.ir.envelope;
        let thrown = env.thrown_message(&error.text).map(str::to_string);
        // Placeholders of the displayed text only (the template's own `{message}` is not one of them).
        let shown = CommandError {
            text: thrown.clone().unwrap_or_else(|| error.text.clone()),
            name: None,
            when: None,
        };
        Variant {
            error,
            ident: ident(&error.variant_name(env)),
            fields: shown
                .placeholders()
                .iter()
                .map(|p| ident(&field_name(p)))
                .collect(),
            thrown,
        }
    }

    fn pattern(&self) -> TokenStream {
        let v = &self.ident;
        if self.fields.is_empty() {
            quote!(Self::#v)
        } else {
            quote!(Self::#v { .. })
        }
    }

    fn bind_pattern(&self) -> TokenStream {
        let (v, fields) = (&self.ident, &self.fields);
        if fields.is_empty() {
            quote!(Self::#v)
        } else {
            quote!(Self::#v { #(#fields),* })
        }
    }
}
