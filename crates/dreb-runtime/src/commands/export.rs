//! `export_html`: the current branch as a self-contained HTML page (the session crate's exporter), with the
//! system prompt and the tool list of the live agent.

use std::path::PathBuf;

use dreb_protocol::errors::ExportHtmlError;
use dreb_protocol::support::RequestContext;
use dreb_protocol::*;
use dreb_session::{HtmlExportOptions, ToolInfo};

use crate::runtime::Runtime;
use crate::sync::lock;

impl Runtime {
    pub(crate) async fn cmd_export_html(
        &self,
        _ctx: &RequestContext,
        p: ExportHtmlParams,
    ) -> Result<ExportHtmlResult, ExportHtmlError> {
        let (system_prompt, tools) = self.inner.agent.with_state(|s| {
            let tools = s
                .tools
                .iter()
                .map(|t| ToolInfo {
                    name: t.definition().name.clone(),
                    description: t.definition().description.clone(),
                })
                .collect::<Vec<_>>();
            (s.system_prompt.clone(), tools)
        });
        // Default: `dreb-session-<session file name>.html`, relative, so it lands in the process cwd.
        let options = HtmlExportOptions {
            output_path: p.output_path.map(PathBuf::from),
            system_prompt: Some(system_prompt),
            tools,
        };
        // Rendering and writing a long session takes a while: keep it off the async threads.
        let rt = self.clone();
        let path =
            tokio::task::spawn_blocking(move || lock(&rt.inner.session).export_html(&options))
                .await
                .map_err(ExportHtmlError::unexpected)?
                .map_err(|e| match e {
                    dreb_session::SessionError::ExportInMemory => ExportHtmlError::InMemorySession,
                    dreb_session::SessionError::NothingToExport => ExportHtmlError::NothingToExport,
                    other => ExportHtmlError::unexpected(other),
                })?;
        Ok(ExportHtmlResult {
            path: path.to_string_lossy().into_owned(),
        })
    }
}
