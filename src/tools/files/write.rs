//! `write_file`: create or replace a whole file, atomically, over exactly what was shown.

use super::{Before, Fingerprint, read_before, resolve, write_unchanged};
use crate::llm::ToolSpec;
use crate::protocol::{EditDiff, ToolDisplay};
use crate::sandbox::paths::ResolvedPath;
use crate::tools::task::string_arg;
use crate::tools::{
    Access, Effect, FileWrite, Prepared, RunFuture, Tool, ToolCtx, ToolError, ToolOutput,
    parse_args,
};
use serde::Deserialize;
use serde_json::{Value, json};

const NAME: &str = "write_file";

/// The `write_file` tool.
pub struct WriteFile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    content: String,
}

/// A whole-file write, checked against the file as it was when shown.
struct Write {
    access: Access,
    path: ResolvedPath,
    before: Before,
    content: String,
    /// The change shown (`None` when the old content is not text).
    diff: Option<EditDiff>,
    /// The content came inside a markdown fence, which was left out.
    unfenced: bool,
}

impl Tool for WriteFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
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

    fn prepare(&self, args: Value, ctx: &ToolCtx) -> Result<Box<dyn Prepared>, ToolError> {
        let mut args: Args = parse_args(NAME, args)?;
        let path = resolve(ctx, &args.path)?;
        let inside = super::unfence::unfence(&path.display, &args.content);
        let unfenced = inside.is_some();
        if let Some(inside) = inside {
            args.content = inside;
        }
        let before = read_before(&path)?;
        if let Before::Present { fingerprint, text } = &before {
            // The permission check has not run yet: the refusal shows a file the model never
            // read only where the rules let it read that file unasked.
            if !ctx.reads.was_read(&path) && !ctx.may_show(&path) {
                return Err(super::unread_error(&path, NAME));
            }
            ctx.reads
                .check_showing(&path, text.as_deref(), fingerprint, "write")?;
            if ctx.refuse_fragments
                && let Some(old) = text
                && let Some(why) =
                    super::dropped::fragment_refusal(&path.display, old, &args.content)
            {
                return Err(ToolError(why));
            }
        }
        let diff = match &before {
            Before::Missing => Some(EditDiff::between(None, &args.content)),
            Before::Present {
                text: Some(old), ..
            } => Some(EditDiff::between(Some(old), &args.content)),
            Before::Present { text: None, .. } => None,
        };
        Ok(Box::new(Write {
            access: Access::Write { path: path.clone() },
            path,
            before,
            content: args.content,
            diff,
            unfenced,
        }))
    }

    fn describe(&self, args: &Value) -> ToolDisplay {
        ToolDisplay::Edit {
            path: string_arg(args, "path"),
            diff: None,
        }
    }
}

impl Prepared for Write {
    fn access(&self) -> &Access {
        &self.access
    }

    fn display(&self) -> ToolDisplay {
        ToolDisplay::Edit {
            path: self.path.display.clone(),
            diff: self.diff.clone(),
        }
    }

    fn run<'a>(self: Box<Self>, ctx: &'a ToolCtx) -> RunFuture<'a> {
        let reads = ctx.reads.clone();
        Box::pin(async move {
            let Write {
                path,
                before,
                content,
                unfenced,
                ..
            } = *self;
            let (created, path, before, content) = tokio::task::spawn_blocking(move || {
                let created = write_unchanged(&path, &before, content.as_bytes());
                (created, path, before, content)
            })
            .await
            .map_err(|e| ToolError(format!("writing the file failed: {e}")))?;
            let verb = if created? { "Created" } else { "Overwrote" };
            // What the model wrote it has seen: it may edit it next without reading it back.
            reads.saw(&path.path, Some(Fingerprint::of(content.as_bytes())));
            let mut text = format!("{verb} {} ({} bytes)", path.display, content.len());
            if unfenced {
                text = format!("{text}. {}", super::unfence::UNFENCED_NOTE);
            }
            if let Some(note) = super::shell_check::notes(&path.display, &content) {
                text = format!("{text}. {note}");
            }
            if let Some(old) = before.text()
                && let Some(note) = super::dropped::note(&path.display, old, &content)
            {
                text = format!("{text}. {note}");
            }
            Ok(ToolOutput::ok(text).with(Effect::FileWritten(FileWrite {
                path: path.display,
                old: before.text().map(str::to_string),
                new: content,
            })))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_ctx::TestCtx;
    use std::os::unix::fs::PermissionsExt;

    async fn run(t: &TestCtx, args: Value) -> Result<String, String> {
        t.call(&WriteFile, args)
            .await
            .map(|o| o.text)
            .map_err(|e| e.0)
    }

    fn prepare_err(t: &TestCtx, args: Value) -> String {
        t.prepare(&WriteFile, args).err().expect("refused").0
    }

    #[tokio::test]
    async fn code_inside_a_fence_is_written_without_it_except_in_markup() {
        let t = TestCtx::new();
        let fenced = "```python\nprint('hi')\n```";
        let out = run(&t, json!({"path": "hi.py", "content": fenced}))
            .await
            .unwrap();
        assert!(out.contains("inside a ``` fence"), "{out}");
        assert_eq!(t.read("hi.py"), "print('hi')\n");
        let out = run(&t, json!({"path": "hi.md", "content": fenced}))
            .await
            .unwrap();
        assert!(!out.contains("fence"), "{out}");
        assert_eq!(t.read("hi.md"), fenced);
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
    async fn a_new_script_is_executable_other_new_files_are_not() {
        let t = TestCtx::new();
        run(
            &t,
            json!({"path": "hello.sh", "content": "#!/bin/sh\necho hi\n"}),
        )
        .await
        .unwrap();
        run(
            &t,
            json!({"path": "notes.txt", "content": "#not a script\n"}),
        )
        .await
        .unwrap();
        let mode = |p: &str| {
            std::fs::metadata(t.ws.join(p))
                .unwrap()
                .permissions()
                .mode()
        };
        assert_eq!(
            mode("hello.sh") & 0o111,
            0o111 & !umask_now(),
            "{:o}",
            mode("hello.sh")
        );
        assert_eq!(mode("notes.txt") & 0o111, 0, "{:o}", mode("notes.txt"));
    }

    /// The test process's umask, from /proc (nothing else reads it without changing it).
    fn umask_now() -> u32 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
        u32::from_str_radix(line[6..].trim(), 8).unwrap()
    }

    #[tokio::test]
    async fn overwrites_and_keeps_mode() {
        let t = TestCtx::new();
        let p = t.write_seen("run.sh", "old");
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
        assert_eq!(
            prepare_err(&t, json!({"path": "dir", "content": "x"})),
            "dir is a directory; refusing to write over it. Give a file path."
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
        t.write_seen("real.txt", "old");
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
    async fn prepare_shows_the_diff_and_fixes_the_access() {
        let t = TestCtx::new();
        t.write_seen("a.txt", "before\n");
        let call = t
            .prepare(&WriteFile, json!({"path": "a.txt", "content": "after\n"}))
            .unwrap();
        let Access::Write { path } = call.access() else {
            panic!("expected a write access");
        };
        assert_eq!(path.display, "a.txt");
        assert_eq!(
            call.display(),
            ToolDisplay::Edit {
                path: "a.txt".into(),
                diff: Some(EditDiff::between(Some("before\n"), "after\n")),
            }
        );
        let outside = t
            .prepare(&WriteFile, json!({"path": "../out.txt", "content": ""}))
            .unwrap();
        let Access::Write { path } = outside.access() else {
            panic!("expected a write access");
        };
        assert!(!path.inside_workspace);
        assert!(outside.display().diff().is_some_and(|d| d.created));
        t.write_seen("bin", b"\0\x01\x02");
        let binary = t
            .prepare(&WriteFile, json!({"path": "bin", "content": ""}))
            .unwrap();
        assert_eq!(
            binary.display().diff(),
            None,
            "binary content is not diffed"
        );
        let err = prepare_err(&t, json!({"path": "a.txt"}));
        assert!(err.contains("missing field `content`"), "{err}");
    }

    #[tokio::test]
    async fn a_file_changed_after_prepare_is_not_written() {
        let t = TestCtx::new();
        t.write_seen("a.txt", "v1\n");
        let call = t
            .prepare(&WriteFile, json!({"path": "a.txt", "content": "mine\n"}))
            .unwrap();
        t.write("a.txt", "v2\n");
        let err = call.run(&t.ctx).await.unwrap_err();
        assert_eq!(
            err.0,
            "the file changed since you proposed this edit; read it again. Nothing was written to a.txt."
        );
        assert_eq!(t.read("a.txt"), "v2\n");

        // Created meanwhile: also a change.
        let call = t
            .prepare(&WriteFile, json!({"path": "new.txt", "content": "mine"}))
            .unwrap();
        t.write("new.txt", "theirs");
        assert!(call.run(&t.ctx).await.is_err());
        assert_eq!(t.read("new.txt"), "theirs");
    }

    #[tokio::test]
    async fn the_effect_is_what_was_written() {
        let t = TestCtx::new();
        t.write_seen("a.txt", "old\n");
        let out = t
            .call(&WriteFile, json!({"path": "a.txt", "content": "new\n"}))
            .await
            .unwrap();
        assert_eq!(
            out.effect,
            Effect::FileWritten(FileWrite {
                path: "a.txt".into(),
                old: Some("old\n".into()),
                new: "new\n".into(),
            })
        );
    }

    #[tokio::test]
    async fn an_existing_file_must_have_been_read_and_unchanged() {
        let t = TestCtx::new();
        t.write("calc.py", "def add(a, b):\n    return a + b\n");
        let args = json!({"path": "calc.py", "content": "def sub(a, b):\n    return a - b\n"});
        // Refused without the file's content: this comes before the permission check.
        let err = prepare_err(&t, args.clone());
        assert!(
            err.starts_with(
                "calc.py exists and you had not read it, so nothing was changed. 1. Read it \
                 with read_file. 2. Now call write_file again"
            ) && !err.contains("return a + b"),
            "{err}"
        );
        t.call(&crate::tools::files::ReadFile, json!({"path": "calc.py"}))
            .await
            .unwrap();
        // Changed outside after the read: read it again.
        t.write("calc.py", "def add(a, b):\n    return b + a\n");
        let err = prepare_err(&t, args.clone());
        assert!(
            err.starts_with(
                "calc.py changed since you read it, so nothing was changed. Here it is"
            ) && err.ends_with("     2\t    return b + a\n"),
            "{err}"
        );
        assert_eq!(t.read("calc.py"), "def add(a, b):\n    return b + a\n");
        // The refusal showed the new content: the write may go ahead now.
        run(&t, args).await.unwrap();
        // What it wrote it may write again without reading it back; a new file needs nothing.
        run(&t, json!({"path": "calc.py", "content": "x = 1\n"}))
            .await
            .unwrap();
        run(&t, json!({"path": "fresh.py", "content": "y = 2\n"}))
            .await
            .unwrap();
        run(&t, json!({"path": "fresh.py", "content": "y = 3\n"}))
            .await
            .unwrap();
        assert_eq!(t.read("fresh.py"), "y = 3\n");
    }

    #[test]
    fn describe_names_the_path() {
        assert_eq!(
            WriteFile.describe(&json!({"path": "src/x.rs", "content": ""})),
            ToolDisplay::Edit {
                path: "src/x.rs".into(),
                diff: None
            }
        );
    }
}
