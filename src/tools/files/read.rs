//! `read_file`: numbered lines, paged by line number, bounded in lines and bytes.

use super::{
    Opened, SNIFF_BYTES, directory_error, looks_binary, missing_error, open_regular, resolve,
};
use crate::llm::ToolSpec;
use crate::protocol::{LineRange, ToolDisplay};
use crate::sandbox::paths::ResolvedPath;
use crate::tools::task::string_arg;
use crate::tools::{Access, Prepared, RunFuture, Tool, ToolCtx, ToolError, ToolOutput, parse_args};
use serde::Deserialize;
use serde_json::{Value, json};
use std::fs;
use std::io::{BufRead, BufReader, Read};

/// Lines returned when no `limit` is given.
const DEFAULT_LIMIT: u64 = 2000;
/// Upper bound on the text returned, whatever the limit.
const MAX_OUTPUT_BYTES: usize = 256 * 1024;
/// Characters shown of one line before it is cut.
const MAX_LINE_CHARS: usize = 2000;
/// Bytes kept of one line while reading (enough for `MAX_LINE_CHARS` of any UTF-8).
const MAX_LINE_BYTES: usize = MAX_LINE_CHARS * 4;
/// How far past the shown part we read to count the remaining lines.
const COUNT_BUDGET_BYTES: u64 = 64 * 1024 * 1024;

const NAME: &str = "read_file";

/// The `read_file` tool.
pub struct ReadFile;

/// A checked read of one file, already open: what runs reads exactly the file approved.
struct ReadCall {
    access: Access,
    path: ResolvedPath,
    file: fs::File,
    size: u64,
    offset: u64,
    limit: u64,
    /// The window asked for, for the display (`None`: the default window).
    lines: Option<LineRange>,
}

/// The lines a call asks for, when it names any.
fn window(offset: Option<u64>, limit: Option<u64>) -> Option<LineRange> {
    if offset.is_none() && limit.is_none() {
        return None;
    }
    let first = offset.unwrap_or(1).max(1);
    let last = first + limit.unwrap_or(DEFAULT_LIMIT).max(1) - 1;
    Some(LineRange { first, last })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    offset: Option<u64>,
    limit: Option<u64>,
}

/// Opens `path` if it is an existing, readable regular file, with the tool's error otherwise.
/// The open is race-free: what is read is the file that was resolved (and approved).
fn open_checked(path: &ResolvedPath) -> Result<(fs::File, u64), ToolError> {
    match open_regular(path)? {
        Opened::File(file, meta) => Ok((file, meta.len())),
        Opened::Directory => Err(directory_error(path)),
        // A FIFO or a device could block forever or never end.
        Opened::Special => Err(ToolError(format!(
            "{} is not a regular file (a device, FIFO or socket); read_file reads regular files only.",
            path.display
        ))),
        Opened::Missing => Err(missing_error(
            path,
            "Check the path (bash `ls` or `find` can help).",
        )),
    }
}

/// Reads one line into `out` (without the newline), keeping at most `keep` bytes of it.
/// Returns the line's full length, or `None` at the end of the file.
fn next_line(
    r: &mut impl BufRead,
    keep: usize,
    out: &mut Vec<u8>,
) -> std::io::Result<Option<usize>> {
    out.clear();
    let mut total = 0;
    let mut any = false;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(any.then_some(total));
        }
        any = true;
        let newline = buf.iter().position(|&b| b == b'\n');
        let chunk = &buf[..newline.unwrap_or(buf.len())];
        let room = keep.saturating_sub(out.len()).min(chunk.len());
        out.extend_from_slice(&chunk[..room]);
        total += chunk.len();
        let used = chunk.len() + usize::from(newline.is_some());
        r.consume(used);
        if newline.is_some() {
            return Ok(Some(total));
        }
    }
}

/// Renders one line for display, cutting very long ones with a marker.
fn render_line(kept: &[u8], full_len: usize) -> String {
    let text = String::from_utf8_lossy(kept);
    let text = text.strip_suffix('\r').unwrap_or(&text);
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => {
            let more = full_len.saturating_sub(text[..cut].len());
            format!("{}... [line truncated: {more} more bytes]", &text[..cut])
        }
        None if full_len > kept.len() => {
            format!(
                "{text}... [line truncated: {} more bytes]",
                full_len - kept.len()
            )
        }
        None => text.to_string(),
    }
}

/// Lines `offset..offset + limit` of `file`, numbered, and how much of the file follows.
fn read(
    path: &ResolvedPath,
    mut file: &fs::File,
    size: u64,
    offset: u64,
    limit: u64,
) -> Result<String, ToolError> {
    let cannot = |e: std::io::Error| ToolError(format!("cannot read {}: {e}.", path.display));
    let mut sample = Vec::with_capacity(SNIFF_BYTES);
    (&mut file)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut sample)
        .map_err(cannot)?;
    if looks_binary(&sample) {
        return Err(ToolError(format!(
            "{} is a binary file ({} bytes); read_file shows text only. Use bash (e.g. `file`, `xxd | head`) to inspect it.",
            path.display, size
        )));
    }
    let mut reader = BufReader::with_capacity(64 * 1024, std::io::Cursor::new(sample).chain(file));
    let mut line = Vec::new();
    let mut line_no: u64 = 0;
    while line_no + 1 < offset {
        if next_line(&mut reader, 0, &mut line)
            .map_err(cannot)?
            .is_none()
        {
            break;
        }
        line_no += 1;
    }
    let page = Page::read(&mut reader, &mut line, line_no, limit).map_err(cannot)?;
    if page.shown == 0 && page.pending.is_none() {
        let line_no = page.line_no;
        if line_no == 0 {
            return Ok(format!("({} is empty)", path.display));
        }
        return Err(ToolError(format!(
            "offset {offset} is past the end of {}, which has {line_no} line{}. Use an offset between 1 and {line_no}.",
            path.display,
            if line_no == 1 { "" } else { "s" }
        )));
    }
    let rest = rest_note(&mut reader, &mut line, &page).map_err(cannot)?;
    Ok(page.text + &rest)
}

/// The lines shown by one read.
struct Page {
    /// The numbered lines, joined by newlines.
    text: String,
    /// How many lines `text` holds.
    shown: u64,
    /// The number of the last line shown (or skipped).
    line_no: u64,
    /// A line that was read but did not fit in the output.
    pending: Option<String>,
}

impl Page {
    /// Up to `limit` lines after line `line_no`, within the output's size.
    fn read(
        reader: &mut impl BufRead,
        line: &mut Vec<u8>,
        mut line_no: u64,
        limit: u64,
    ) -> std::io::Result<Page> {
        let mut text = String::new();
        let mut shown = 0u64;
        let mut pending: Option<String> = None;
        while shown < limit {
            let Some(full) = next_line(reader, MAX_LINE_BYTES, line)? else {
                break;
            };
            let rendered = format!("{:>6}\t{}", line_no + 1, render_line(line, full));
            if text.len() + rendered.len() + 1 > MAX_OUTPUT_BYTES && shown > 0 {
                pending = Some(rendered);
                break;
            }
            if shown > 0 {
                text.push('\n');
            }
            text.push_str(&rendered);
            line_no += 1;
            shown += 1;
        }
        Ok(Page {
            text,
            shown,
            line_no,
            pending,
        })
    }
}

/// What follows `page` in the file, so the model knows how far it is from the end: counted
/// up to a budget, then "more than".
fn rest_note(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    page: &Page,
) -> std::io::Result<String> {
    let mut remaining = u64::from(page.pending.is_some());
    let mut scanned = 0u64;
    let mut exhausted = true;
    while let Some(len) = next_line(reader, 0, line)? {
        remaining += 1;
        scanned += len as u64 + 1;
        if scanned > COUNT_BUDGET_BYTES {
            exhausted = false;
            break;
        }
    }
    let next = page.line_no + 1;
    Ok(if !exhausted {
        format!(
            "\n... the file continues (more than {remaining} more lines); call read_file with offset={next} to continue"
        )
    } else if remaining > 0 {
        let plural = if remaining == 1 { "line" } else { "lines" };
        format!("\n... {remaining} more {plural}; call read_file with offset={next} to continue")
    } else {
        String::new()
    })
}

impl Tool for ReadFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: "Read a text file. Returns numbered lines (number, tab, text); the \
                numbers are not part of the file. At most 2000 lines per call: use offset and \
                limit for more. Example: {\"path\": \"src/app.py\"}"
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, relative to the workspace or absolute."},
                    "offset": {"type": "integer", "minimum": 1, "description": "Line number to start at (1-based). Default 1."},
                    "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of lines to return. Default 2000."}
                },
                "required": ["path"]
            }),
        }
    }

    fn prepare(&self, args: Value, ctx: &ToolCtx) -> Result<Box<dyn Prepared>, ToolError> {
        let args: Args = parse_args(NAME, args)?;
        let path = resolve(ctx, &args.path)?;
        // A missing file or a directory is refused before anyone is asked about it.
        let (file, size) = open_checked(&path)?;
        Ok(Box::new(ReadCall {
            access: Access::Read { path: path.clone() },
            path,
            file,
            size,
            offset: args.offset.unwrap_or(1).max(1),
            limit: args.limit.unwrap_or(DEFAULT_LIMIT).max(1),
            lines: window(args.offset, args.limit),
        }))
    }

    fn describe(&self, args: &Value) -> ToolDisplay {
        let number = |k: &str| args.get(k).and_then(Value::as_u64);
        ToolDisplay::Read {
            path: string_arg(args, "path"),
            lines: window(number("offset"), number("limit")),
        }
    }
}

impl Prepared for ReadCall {
    fn access(&self) -> &Access {
        &self.access
    }

    fn display(&self) -> ToolDisplay {
        ToolDisplay::Read {
            path: self.path.display.clone(),
            lines: self.lines,
        }
    }

    fn run<'a>(self: Box<Self>, ctx: &'a ToolCtx) -> RunFuture<'a> {
        let reads = ctx.reads.clone();
        Box::pin(async move {
            let ReadCall {
                path,
                file,
                size,
                offset,
                limit,
                ..
            } = *self;
            let text = tokio::task::spawn_blocking(move || {
                let text = read(&path, &file, size, offset, limit)?;
                // Any part read counts (as in Claude Code): the model knows the file is there.
                reads.saw_open(&path.path, &file);
                Ok::<_, ToolError>(text)
            })
            .await
            .map_err(|e| ToolError(format!("reading the file failed: {e}")))??;
            Ok(ToolOutput::ok(text))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_ctx::TestCtx;

    async fn run(t: &TestCtx, args: Value) -> Result<String, String> {
        t.call(&ReadFile, args)
            .await
            .map(|o| o.text)
            .map_err(|e| e.0)
    }

    fn lines(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[tokio::test]
    async fn numbered_lines_whole_file() {
        let t = TestCtx::new();
        t.write("a.txt", "alpha\nbeta\r\ngamma");
        let out = run(&t, json!({"path": "a.txt"})).await.unwrap();
        assert_eq!(out, "     1\talpha\n     2\tbeta\n     3\tgamma");
    }

    #[tokio::test]
    async fn default_limit_and_paging() {
        let t = TestCtx::new();
        t.write("big.txt", lines(3234));
        let out = run(&t, json!({"path": "big.txt"})).await.unwrap();
        assert!(out.starts_with("     1\tline 1\n"));
        assert!(out.contains("  2000\tline 2000\n"));
        assert!(!out.contains("line 2001"));
        assert!(
            out.ends_with("\n... 1234 more lines; call read_file with offset=2001 to continue"),
            "{}",
            &out[out.len() - 100..]
        );
        let next = run(&t, json!({"path": "big.txt", "offset": 2001}))
            .await
            .unwrap();
        assert!(next.starts_with("  2001\tline 2001\n"));
        assert!(
            next.ends_with("  3234\tline 3234"),
            "no paging hint at the end"
        );
        let window = run(&t, json!({"path": "big.txt", "offset": 10, "limit": 2}))
            .await
            .unwrap();
        assert_eq!(
            window,
            "    10\tline 10\n    11\tline 11\n... 3223 more lines; call read_file with offset=12 to continue"
        );
        let one = run(&t, json!({"path": "big.txt", "offset": 3233, "limit": 1}))
            .await
            .unwrap();
        assert!(one.ends_with("... 1 more line; call read_file with offset=3234 to continue"));
    }

    #[tokio::test]
    async fn offset_past_end_and_empty_file() {
        let t = TestCtx::new();
        t.write("s.txt", "one\ntwo\n");
        let err = run(&t, json!({"path": "s.txt", "offset": 5}))
            .await
            .unwrap_err();
        assert_eq!(
            err,
            "offset 5 is past the end of s.txt, which has 2 lines. Use an offset between 1 and 2."
        );
        t.write("e.txt", "");
        assert_eq!(
            run(&t, json!({"path": "e.txt"})).await.unwrap(),
            "(e.txt is empty)"
        );
    }

    #[tokio::test]
    async fn output_capped_at_256_kb() {
        let t = TestCtx::new();
        let line = "x".repeat(1000);
        let content: String = (0..1000).map(|_| format!("{line}\n")).collect();
        t.write("wide.txt", content);
        let out = run(&t, json!({"path": "wide.txt"})).await.unwrap();
        assert!(out.len() <= MAX_OUTPUT_BYTES + 200, "{}", out.len());
        let shown = out.lines().filter(|l| l.contains('\t')).count();
        assert!(shown > 200 && shown < 300, "{shown}");
        let next = shown + 1;
        assert!(out.ends_with(&format!(
            "... {} more lines; call read_file with offset={next} to continue",
            1000 - shown
        )));
    }

    #[tokio::test]
    async fn long_lines_are_truncated() {
        let t = TestCtx::new();
        let long = "é".repeat(3000) + &"z".repeat(100_000);
        t.write("min.js", format!("{long}\nshort\n"));
        let out = run(&t, json!({"path": "min.js"})).await.unwrap();
        let first = out.lines().next().unwrap();
        assert!(first.starts_with("     1\téé"));
        assert_eq!(first.chars().filter(|&c| c == 'é').count(), MAX_LINE_CHARS);
        let more = 1000 * 2 + 100_000;
        assert!(
            first.ends_with(&format!("... [line truncated: {more} more bytes]")),
            "{first}"
        );
        assert!(out.ends_with("     2\tshort"));
    }

    #[tokio::test]
    async fn binary_file_is_an_error() {
        let t = TestCtx::new();
        t.write("img.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
        let err = run(&t, json!({"path": "img.png"})).await.unwrap_err();
        assert!(
            err.starts_with("img.png is a binary file (16 bytes); read_file shows text only."),
            "{err}"
        );
    }

    #[tokio::test]
    async fn directory_is_an_error_listing_entries() {
        let t = TestCtx::new();
        t.write("src/main.rs", "fn main() {}");
        t.write("src/util/mod.rs", "");
        let err = run(&t, json!({"path": "src"})).await.unwrap_err();
        assert_eq!(
            err,
            "src is a directory, not a file. It contains main.rs, util/. Use bash `ls` to list it, then name a file inside."
        );
        let err = t.prepare(&ReadFile, json!({"path": "src"})).err().unwrap();
        assert!(err.0.starts_with("src is a directory"));
    }

    #[tokio::test]
    async fn special_files_are_refused() {
        let t = TestCtx::new();
        let fifo = t.ws.join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        let err = run(&t, json!({"path": "pipe"})).await.unwrap_err();
        assert_eq!(
            err,
            "pipe is not a regular file (a device, FIFO or socket); read_file reads regular files only."
        );
        // Devices are refused before they are looked at.
        let err = run(&t, json!({"path": "/dev/zero"})).await.unwrap_err();
        assert!(err.starts_with("/dev/zero is under /dev"), "{err}");
    }

    #[tokio::test]
    async fn missing_file_suggests_similar_names() {
        let t = TestCtx::new();
        t.write("src/main.rs", "");
        let err = run(&t, json!({"path": "src/mian.rs"})).await.unwrap_err();
        assert_eq!(
            err,
            "src/mian.rs does not exist. Did you mean src/main.rs? Check the path (bash `ls` or `find` can help)."
        );
        let err = run(&t, json!({"path": "nope/x.rs"})).await.unwrap_err();
        assert!(
            err.starts_with("nope/x.rs does not exist. Its directory nope does not exist either."),
            "{err}"
        );
        assert!(
            t.prepare(&ReadFile, json!({"path": "src/mian.rs"}))
                .is_err()
        );
    }

    #[tokio::test]
    async fn prepare_resolves_the_path() {
        let t = TestCtx::new();
        t.write("a.txt", "x");
        let call = t.prepare(&ReadFile, json!({"path": "./a.txt"})).unwrap();
        let Access::Read { path } = call.access() else {
            panic!("expected a read access");
        };
        assert_eq!(path.path, t.ws.join("a.txt"));
        assert!(path.inside_workspace);
        let err = t.prepare(&ReadFile, json!({"path": ""})).err().unwrap();
        assert!(err.0.contains("the path is empty"));
        let err = t
            .prepare(&ReadFile, json!({"path": "a.txt", "offset": "3"}))
            .err()
            .unwrap();
        assert!(err.0.contains("`offset`"), "{}", err.0);
    }

    /// A read outside the workspace is asked about; what runs afterwards reads the file that
    /// was shown, even if its directory became a symlink to a secret meanwhile.
    #[tokio::test]
    async fn an_approved_read_reads_the_file_that_was_shown() {
        let t = TestCtx::new();
        let base = t.ws.parent().unwrap().to_path_buf();
        std::fs::create_dir_all(base.join("docs")).unwrap();
        std::fs::create_dir_all(base.join("secret")).unwrap();
        std::fs::write(base.join("docs/a.txt"), "public").unwrap();
        std::fs::write(base.join("secret/a.txt"), "private").unwrap();
        let path = base.join("docs/a.txt").display().to_string();
        let call = t.prepare(&ReadFile, json!({ "path": path })).unwrap();
        let Access::Read { path: shown } = call.access() else {
            panic!("expected a read access");
        };
        assert!(!shown.inside_workspace);
        std::fs::rename(base.join("docs"), base.join("docs.old")).unwrap();
        std::os::unix::fs::symlink(base.join("secret"), base.join("docs")).unwrap();
        let out = call.run(&t.ctx).await.unwrap();
        assert_eq!(out.text, "     1\tpublic");
        // Prepared after the swap: resolved to the target, shown as that, never confused.
        let call = t.prepare(&ReadFile, json!({ "path": path })).unwrap();
        let Access::Read { path: shown } = call.access() else {
            panic!("expected a read access");
        };
        assert_eq!(shown.path, base.join("secret/a.txt"));
    }

    #[test]
    fn the_display_shows_the_range() {
        let read = |args: Value| ReadFile.describe(&args).subject();
        assert_eq!(read(json!({"path": "src/main.rs"})), "src/main.rs");
        assert_eq!(
            read(json!({"path": "src/main.rs", "limit": 200})),
            "src/main.rs:1-200"
        );
        assert_eq!(read(json!({"path": "a", "offset": 2001})), "a:2001-4000");
    }
}
