//! Where the file tools (`read`, `edit`, `write`) read and write text: the local disk, unless the session's front
//! end routes it elsewhere. An ACP editor offers its buffers this way (`fs/read_text_file`, `fs/write_text_file`),
//! so the agent reads unsaved changes and its edits land in the editor.

use std::path::Path;

use async_trait::async_trait;

/// A front end's text files. Each method may decline (`Ok(None)` / `Ok(false)`): the tool then uses the disk.
#[async_trait]
pub trait TextFiles: Send + Sync {
    /// The text of `path` (absolute), or `None` to read it from disk.
    async fn read_text(&self, path: &Path) -> Result<Option<String>, String>;
    /// Writes `content` to `path` (absolute); `false` to write it to disk instead.
    async fn write_text(&self, path: &Path, content: &str) -> Result<bool, String>;
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::PathBuf;
    use std::sync::{Arc, Mutex};

    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::tools::test_util::{noop_update, text_of};
    use crate::{ToolContext, create_tool};

    /// An editor's buffers: `a.txt` is open (with unsaved text); every other file is declined.
    #[derive(Default)]
    struct Buffers(Mutex<HashMap<PathBuf, String>>);

    #[async_trait]
    impl TextFiles for Buffers {
        async fn read_text(&self, path: &Path) -> Result<Option<String>, String> {
            Ok(self.0.lock().unwrap().get(path).cloned())
        }
        async fn write_text(&self, path: &Path, content: &str) -> Result<bool, String> {
            let mut open = self.0.lock().unwrap();
            match open.get_mut(path) {
                Some(text) => {
                    *text = content.to_string();
                    Ok(true)
                }
                None => Ok(false),
            }
        }
    }

    #[tokio::test]
    async fn read_edit_and_write_go_through_the_front_ends_files_and_fall_back_to_disk() {
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("a.txt");
        std::fs::write(&open, "saved text\n").unwrap();
        let buffers = Arc::new(Buffers::default());
        buffers
            .0
            .lock()
            .unwrap()
            .insert(open.clone(), "unsaved text\n".into());
        let mut ctx = ToolContext::new(dir.path());
        ctx.files = Some(buffers.clone());
        let run = |name: &str, args: serde_json::Value| {
            let tool = create_tool(name, &ctx).unwrap();
            async move {
                tool.execute("c", args, CancellationToken::new(), noop_update())
                    .await
                    .map(|o| text_of(&o))
                    .map_err(|e| e.message)
            }
        };
        let read = run("read", json!({"path": "a.txt"})).await.unwrap();
        assert!(read.contains("unsaved text"), "{read}");
        run(
            "edit",
            json!({"path": "a.txt", "oldText": "unsaved", "newText": "edited"}),
        )
        .await
        .unwrap();
        assert_eq!(buffers.0.lock().unwrap()[&open], "edited text\n");
        assert_eq!(std::fs::read_to_string(&open).unwrap(), "saved text\n");
        run("write", json!({"path": "a.txt", "content": "new"}))
            .await
            .unwrap();
        assert_eq!(buffers.0.lock().unwrap()[&open], "new");
        // A file the front end declines is read and written on disk.
        run("write", json!({"path": "b.txt", "content": "on disk"}))
            .await
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("b.txt")).unwrap(),
            "on disk"
        );
        let read = run("read", json!({"path": "b.txt"})).await.unwrap();
        assert!(read.contains("on disk"));
    }
}
