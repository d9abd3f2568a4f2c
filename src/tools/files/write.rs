//! `write_file`: create or replace a whole file, atomically.

use super::{read_text, resolve, write_atomic};
use crate::llm::ToolSpec;
use crate::tools::{Access, Tool, ToolCtx, ToolError, ToolOutput, parse_args};
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

/// The `write_file` tool.
pub struct WriteFile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    content: String,
}

impl Tool for WriteFile {
    fn name(&self) -> &'static str {
        "write_file"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_file".into(),
            description: "Create a file, or replace all of a file's content (parent directories \
                are created). To change a part of a file, use str_replace. \
                Example: {\"path\": \"hello.py\", \"content\": \"print('hello')\\n\"}"
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, relative to the workspace or absolute."},
                    "content": {"type": "string", "description": "The complete new content of the file."}
                },
                "required": ["path", "content"]
            }),
        }
    }

    fn access(&self, args: &Value, ctx: &ToolCtx) -> Result<Access, ToolError> {
        let args: Args = parse_args("write_file", args)?;
        let path = resolve(ctx, &args.path)?;
        if path.path.is_dir() {
            return Err(ToolError(format!(
                "{} is a directory; refusing to write over it. Give a file path.",
                path.display
            )));
        }
        let old = read_text(&path.path);
        Ok(Access::Write {
            path,
            old,
            new: args.content,
        })
    }

    fn summary(&self, args: &Value) -> String {
        args.get("path")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string()
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolCtx,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args("write_file", &args)?;
            let path = resolve(ctx, &args.path)?;
            let bytes = args.content.len();
            let display = path.display.clone();
            let created =
                tokio::task::spawn_blocking(move || write_atomic(&path, args.content.as_bytes()))
                    .await
                    .map_err(|e| ToolError(format!("writing the file failed: {e}")))??;
            let verb = if created { "Created" } else { "Overwrote" };
            Ok(ToolOutput::ok(format!("{verb} {display} ({bytes} bytes)")))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_ctx::TestCtx;
    use std::os::unix::fs::PermissionsExt;

    async fn run(t: &TestCtx, args: Value) -> Result<String, String> {
        WriteFile
            .run(args, &t.ctx)
            .await
            .map(|o| o.text)
            .map_err(|e| e.0)
    }

    #[tokio::test]
    async fn creates_with_parent_dirs() {
        let t = TestCtx::new();
        let out = run(&t, json!({"path": "a/b/c.txt", "content": "héllo\n"}))
            .await
            .unwrap();
        assert_eq!(out, "Created a/b/c.txt (7 bytes)");
        assert_eq!(t.read("a/b/c.txt"), "héllo\n");
    }

    #[tokio::test]
    async fn overwrites_and_keeps_mode() {
        let t = TestCtx::new();
        let p = t.write("run.sh", "old");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = run(&t, json!({"path": "run.sh", "content": "#!/bin/sh\n"}))
            .await
            .unwrap();
        assert_eq!(out, "Overwrote run.sh (10 bytes)");
        assert_eq!(t.read("run.sh"), "#!/bin/sh\n");
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o755
        );
        let names: Vec<_> = std::fs::read_dir(&t.ws)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "no temp file left behind: {names:?}");
    }

    #[tokio::test]
    async fn refuses_to_write_over_a_directory() {
        let t = TestCtx::new();
        std::fs::create_dir(t.ws.join("dir")).unwrap();
        let err = run(&t, json!({"path": "dir", "content": "x"}))
            .await
            .unwrap_err();
        assert_eq!(
            err,
            "dir is a directory; refusing to write over it. Give a file path."
        );
        assert!(
            WriteFile
                .access(&json!({"path": "dir", "content": "x"}), &t.ctx)
                .is_err()
        );
        assert!(t.ws.join("dir").is_dir());
    }

    #[tokio::test]
    async fn parent_that_is_a_file_is_an_error() {
        let t = TestCtx::new();
        t.write("file", "x");
        let err = run(&t, json!({"path": "file/inner.txt", "content": "x"}))
            .await
            .unwrap_err();
        assert!(
            err.starts_with("cannot create the directory for file/inner.txt:"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn writes_through_a_symlink_to_its_target() {
        let t = TestCtx::new();
        t.write("real.txt", "old");
        std::os::unix::fs::symlink("real.txt", t.ws.join("alias.txt")).unwrap();
        let out = run(&t, json!({"path": "alias.txt", "content": "new"}))
            .await
            .unwrap();
        assert_eq!(out, "Overwrote real.txt (3 bytes)");
        assert!(
            std::fs::symlink_metadata(t.ws.join("alias.txt"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(t.read("real.txt"), "new");
    }

    #[tokio::test]
    async fn access_previews_old_and_new() {
        let t = TestCtx::new();
        t.write("a.txt", "before");
        let access = WriteFile
            .access(&json!({"path": "a.txt", "content": "after"}), &t.ctx)
            .unwrap();
        let Access::Write { path, old, new } = access else {
            panic!("expected a write access");
        };
        assert_eq!(path.display, "a.txt");
        assert_eq!(old.as_deref(), Some("before"));
        assert_eq!(new, "after");
        let Access::Write { old, path, .. } = WriteFile
            .access(&json!({"path": "../out.txt", "content": ""}), &t.ctx)
            .unwrap()
        else {
            panic!("expected a write access");
        };
        assert_eq!(old, None);
        assert!(!path.inside_workspace);
        t.write("bin", b"\0\x01\x02");
        let Access::Write { old, .. } = WriteFile
            .access(&json!({"path": "bin", "content": ""}), &t.ctx)
            .unwrap()
        else {
            panic!("expected a write access");
        };
        assert_eq!(old, None, "binary content is not previewed");
        let err = WriteFile
            .access(&json!({"path": "a.txt"}), &t.ctx)
            .unwrap_err();
        assert!(err.0.contains("missing field `content`"), "{}", err.0);
    }

    #[test]
    fn summary_is_the_path() {
        assert_eq!(
            WriteFile.summary(&json!({"path": "src/x.rs", "content": ""})),
            "src/x.rs"
        );
    }
}
