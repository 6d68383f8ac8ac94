//! The web tools: `web_fetch` ([`fetch`]) and `web_search` ([`search`], its cross-process queue in
//! [`search_queue`]); HTTP, the private-address block and redirects in [`net`], HTML to Markdown in [`html`], PDF
//! text in [`pdf`].

pub mod fetch;
pub mod html;
pub mod net;
pub mod pdf;
pub mod search;
pub mod search_queue;

#[cfg(test)]
mod tests;
