//! The client's text files (`fs/read_text_file`, `fs/write_text_file`) behind the tools' [`TextFiles`] seam, for
//! the capabilities the client offered in `initialize`: the agent reads the editor's unsaved buffers and its edits
//! land in the editor. Without a capability the tools use the disk.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use agent_client_protocol_schema::v1::{
    FileSystemCapabilities, ReadTextFileRequest, ReadTextFileResponse, SessionId,
    WriteTextFileRequest,
};
use async_trait::async_trait;
use dreb_tools::TextFiles;
use serde_json::Value;

use crate::connection::Connection;

pub struct ClientFiles {
    conn: Connection,
    /// Set once the session has its id (a new session learns it after its runtime started).
    session: Arc<OnceLock<SessionId>>,
    read: bool,
    write: bool,
}

impl ClientFiles {
    /// `None` when the client offers neither method.
    pub fn new(
        conn: Connection,
        caps: &FileSystemCapabilities,
        session: Arc<OnceLock<SessionId>>,
    ) -> Option<ClientFiles> {
        (caps.read_text_file || caps.write_text_file).then(|| ClientFiles {
            conn,
            session,
            read: caps.read_text_file,
            write: caps.write_text_file,
        })
    }
}

#[async_trait]
impl TextFiles for ClientFiles {
    async fn read_text(&self, path: &Path) -> Result<Option<String>, String> {
        let Some(session) = self.session.get().filter(|_| self.read) else {
            return Ok(None);
        };
        let request = ReadTextFileRequest::new(session.clone(), path);
        let response: ReadTextFileResponse = self
            .conn
            .request("fs/read_text_file", &request)
            .get()
            .await
            .map_err(|e| e.to_string())?;
        Ok(Some(response.content))
    }

    async fn write_text(&self, path: &Path, content: &str) -> Result<bool, String> {
        let Some(session) = self.session.get().filter(|_| self.write) else {
            return Ok(false);
        };
        let request = WriteTextFileRequest::new(session.clone(), path, content);
        // The result carries nothing (clients answer `{}` or `null`).
        self.conn
            .request("fs/write_text_file", &request)
            .get::<Value>()
            .await
            .map_err(|e| e.to_string())?;
        Ok(true)
    }
}
