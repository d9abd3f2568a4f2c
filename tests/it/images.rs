//! Attached images end to end through the real binary: `@shot.png` in a `rein exec` prompt
//! becomes an image block in each provider's wire format (checked byte for byte against what
//! the providers document), a model without images is refused before anything is sent, a
//! large image is downscaled, secret and special paths are refused, and a resumed session
//! holds a reference and a hash (no base64) and reads the file again.

use crate::support;

use base64::Engine;
use serde_json::{Value, json};
use support::rein::{World, assert_ok, stderr, stdout};
use support::{RecordedRequest, Reply, ScriptedServer};

/// A PNG of `w`×`h` with some structure (so it compresses like a picture, not like nothing).
fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbaImage::from_fn(w, h, |x, y| {
        image::Rgba([
            (x * 7 % 256) as u8,
            (y * 3 % 256) as u8,
            ((x ^ y) % 256) as u8,
            255,
        ])
    });
    let mut out = Vec::new();
    image::DynamicImage::ImageRgba8(img)
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Writes `bytes` as a workspace file.
fn put(w: &World, rel: &str, bytes: &[u8]) {
    std::fs::write(w.ws.join(rel), bytes).unwrap();
}

/// The JSON text of `v` as rein's serde_json writes it (same crate, same features).
fn text(v: &Value) -> String {
    serde_json::to_string(v).unwrap()
}

/// The content array of the last user message of a Chat Completions or Messages body.
fn user_parts(req: &RecordedRequest) -> Vec<Value> {
    let msgs = req.messages();
    let user = msgs.iter().rev().find(|m| m["role"] == "user").unwrap();
    user["content"].as_array().cloned().unwrap_or_default()
}

fn session_text(w: &World) -> String {
    let dir = w.data_home.join("rein/sessions");
    let mut out = String::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "jsonl") {
            out.push_str(&std::fs::read_to_string(e.path()).unwrap());
        }
    }
    out
}

#[test]
fn openai_chat_sends_a_content_array_with_an_image_url_data_part() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("A gradient."));
    let w = World::new(&s);
    let data = png(64, 32);
    put(&w, "shot.png", &data);
    let o = w.exec(&["look at @shot.png"]);
    assert_ok(&o);
    assert!(
        stderr(&o).contains("[image shot.png 64×32]"),
        "{}",
        stderr(&o)
    );
    let req = s.request(0);
    let parts = user_parts(&req);
    assert_eq!(
        parts[0],
        json!({"type": "text", "text": "look at @shot.png"})
    );
    // OpenAI's documented part: {"type": "image_url", "image_url": {"url": "data:…;base64,…"}}.
    let image = json!({
        "type": "image_url",
        "image_url": {"url": format!("data:image/png;base64,{}", b64(&data))},
    });
    assert_eq!(parts[1], image);
    assert!(req.body_text.contains(&text(&image)), "{}", req.body_text);
    // The late reminder, if any, is a text part after the image, never a message of its own.
    assert!(parts[2..].iter().all(|p| p["type"] == "text"), "{parts:?}");
    assert_eq!(
        req.messages()
            .iter()
            .filter(|m| m["role"] == "user")
            .count(),
        1
    );
}

#[test]
fn anthropic_sends_a_base64_image_block() {
    let s = ScriptedServer::anthropic();
    s.push(Reply::text("A gradient."));
    let w = World::new(&s);
    let data = png(40, 30);
    put(&w, "shot.png", &data);
    assert_ok(&w.exec(&["what is in @shot.png?"]));
    let req = s.request(0);
    let blocks = user_parts(&req);
    // The image before the text about it, as Anthropic's vision guide advises.
    assert_eq!(blocks[1]["type"], "text");
    assert_eq!(blocks[1]["text"], "what is in @shot.png?");
    // Anthropic's documented block: {"type": "image", "source": {"type": "base64",
    // "media_type": "image/png", "data": "…"}} (a cache marker may ride on it).
    let mut block = blocks[0].clone();
    block.as_object_mut().unwrap().remove("cache_control");
    let source = json!({"type": "base64", "media_type": "image/png", "data": b64(&data)});
    assert_eq!(block, json!({"type": "image", "source": source}));
    assert!(req.body_text.contains(&text(&source)), "{}", req.body_text);
}

#[test]
fn responses_sends_an_input_image_with_a_data_url() {
    let s = ScriptedServer::responses();
    s.push(Reply::text("A gradient."));
    let w = World::new(&s);
    let data = png(16, 16);
    put(&w, "shot.png", &data);
    assert_ok(&w.exec(&["describe @shot.png"]));
    let req = s.request(0);
    let input = req.input();
    let at = input
        .iter()
        .position(|i| i["content"][0]["type"] == "input_image")
        .unwrap_or_else(|| panic!("no input_image in {}", req.body_text));
    // The text it came with is the user message right before it.
    assert_eq!(input[at - 1]["content"][0]["text"], "describe @shot.png");
    assert_eq!(input[at]["type"], "message");
    assert_eq!(input[at]["role"], "user");
    // The documented part: {"type": "input_image", "image_url": "data:image/png;base64,…"}.
    let part = json!({
        "type": "input_image",
        "image_url": format!("data:image/png;base64,{}", b64(&data)),
    });
    assert_eq!(input[at]["content"][0], part);
    assert!(req.body_text.contains(&text(&part)), "{}", req.body_text);
}

#[test]
fn a_mention_of_another_file_stays_plain_text() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("ok"));
    let w = World::new(&s);
    w.write("src/main.rs", "fn main() {}\n");
    assert_ok(&w.exec(&["look at @src/main.rs"]));
    let req = s.request(0);
    let user = req
        .messages()
        .into_iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    assert!(user["content"].is_string(), "{user}");
    assert!(!req.body_text.contains("image_url"));
}

#[test]
fn a_missing_image_file_stays_text_with_a_notice() {
    let s = ScriptedServer::openai();
    s.push(Reply::text("I will create it."));
    let w = World::new(&s);
    let o = w.exec(&["create @logo.png with a red square"]);
    assert_ok(&o);
    assert!(
        stderr(&o).contains("@logo.png: no such file; it goes as text, not as an image"),
        "{}",
        stderr(&o)
    );
    let req = s.request(0);
    let user = req
        .messages()
        .into_iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    assert!(
        user["content"]
            .as_str()
            .unwrap()
            .contains("create @logo.png"),
        "{user}"
    );
}

#[test]
fn a_text_only_model_is_refused_before_anything_is_sent() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    put(&w, "shot.png", &png(8, 8));
    let mut c = w.cmd();
    c.env("MODEL", "gpt-3.5-turbo")
        .args(["exec", "look at @shot.png"]);
    let o = support::rein::run_with_timeout(c, std::time::Duration::from_secs(60));
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("gpt-3.5-turbo does not accept images"),
        "{err}"
    );
    assert!(err.contains("images = true"), "{err}");
    assert_eq!(s.request_count(), 0);
    // Nothing was recorded as said.
    assert!(!session_text(&w).contains("look at"));

    w.user_config("retry_backoff_ms = 20\nidle_timeout_secs = 3\nimages = false\n");
    let o = w.exec(&["look at @shot.png"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("images are turned off"),
        "{}",
        stderr(&o)
    );
    assert_eq!(s.request_count(), 0);
}

#[test]
fn a_server_that_refuses_images_gets_a_clear_error_and_the_conversation_goes_on() {
    let s = ScriptedServer::openai();
    s.push(Reply::status(
        400,
        "This model does not support image input.",
    ));
    s.push(Reply::text("Going on without it."));
    let w = World::new(&s);
    put(&w, "shot.png", &png(8, 8));
    let o = w.exec(&["look at @shot.png"]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("the model does not accept images"), "{err}");
    assert!(err.contains("does not support image input"), "{err}");
    // Not retried: the same image would be refused again.
    assert_eq!(s.request_count(), 1);
    // The message is kept; going on sends a note where the image was.
    assert_ok(&w.exec(&["--continue", "go on"]));
    let req = s.request(1);
    assert!(!req.body_text.contains("image_url"), "{}", req.body_text);
    assert!(
        req.body_text.contains(
            "[image shot.png 8×8] was attached here but is not sent again: the model refused images"
        ),
        "{}",
        req.body_text
    );
    assert!(req.body_text.contains("look at @shot.png"));
}

#[test]
fn a_large_image_is_downscaled_and_its_copy_stored_once() {
    let s = ScriptedServer::anthropic();
    s.push(Reply::text("Wide."));
    let w = World::new(&s);
    put(&w, "big.png", &png(3000, 1500));
    let o = w.exec(&["@big.png"]);
    assert_ok(&o);
    assert!(
        stderr(&o).contains("[image big.png 2000×1000]"),
        "{}",
        stderr(&o)
    );
    let blocks = user_parts(&s.request(0));
    let image = blocks.iter().find(|b| b["type"] == "image").unwrap();
    let media = image["source"]["media_type"].as_str().unwrap();
    let data = base64::engine::general_purpose::STANDARD
        .decode(image["source"]["data"].as_str().unwrap())
        .unwrap();
    assert!(data.len() <= rein::images::MAX_BYTES);
    let sent = image::load_from_memory(&data).unwrap();
    assert_eq!((sent.width(), sent.height()), (2000, 1000));
    assert!(media == "image/png" || media == "image/jpeg", "{media}");
    // The downscaled bytes exist in no file: kept once under their hash, not in the session.
    let stored: Vec<_> = std::fs::read_dir(w.data_home.join("rein/images"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(stored.len(), 1);
    assert_eq!(std::fs::read(stored[0].path()).unwrap(), data);
    let session = session_text(&w);
    assert!(
        session.contains("\"original\":{\"width\":3000,\"height\":1500"),
        "{session}"
    );
    assert!(!session.contains(&b64(&data)[..200]));
}

#[test]
fn secret_special_corrupt_and_unsupported_files_are_refused_with_reasons() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    std::fs::create_dir_all(w.home.join(".ssh")).unwrap();
    std::fs::write(w.home.join(".ssh/key.png"), png(4, 4)).unwrap();
    put(&w, "bad.png", b"not a png at all");
    let fifo = w.ws.join("pipe.png");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    let cases: Vec<(&str, &str)> = vec![
        ("look at @~/.ssh/key.png", "which bash cannot see either"),
        ("look at @bad.png", "not an image rein can send"),
        (
            "look at @shot.bmp",
            "is a BMP image; rein sends PNG, JPEG, GIF and WebP",
        ),
    ];
    put(&w, "shot.bmp", b"BM\0\0\0\0\0\0\0\0not really");
    for (prompt, why) in cases {
        let o = w.exec(&[prompt]);
        assert!(!o.status.success(), "{prompt}");
        let err = stderr(&o);
        assert!(
            err.contains("cannot attach @") && err.contains(why),
            "{prompt}: {err}"
        );
    }
    if made.is_ok_and(|st| st.success()) {
        let o = w.exec(&["look at @pipe.png"]);
        assert!(!o.status.success());
        assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
    }
    assert_eq!(s.request_count(), 0);
}

#[test]
fn a_resumed_session_keeps_a_reference_and_reads_the_file_again() {
    let s = ScriptedServer::openai();
    s.push_all([
        Reply::text("One."),
        Reply::text("Two."),
        Reply::text("Three."),
        Reply::text("Four."),
    ]);
    let w = World::new(&s);
    let data = png(32, 20);
    put(&w, "shot.png", &data);
    assert_ok(&w.exec(&["look at @shot.png"]));

    let session = session_text(&w);
    let line = session
        .lines()
        .find(|l| l.starts_with("{\"type\":\"image\""))
        .unwrap_or_else(|| panic!("no image entry:\n{session}"));
    let entry: Value = serde_json::from_str(line).unwrap();
    assert_eq!(entry["name"], "shot.png");
    assert_eq!(entry["media_type"], "image/png");
    assert_eq!(
        (entry["width"].as_u64(), entry["height"].as_u64()),
        (Some(32), Some(20))
    );
    assert_eq!(entry["bytes"].as_u64(), Some(data.len() as u64));
    assert_eq!(entry["sha256"], rein::images::sha256_hex(&data));
    assert_eq!(entry["path"], w.ws.join("shot.png").display().to_string());
    assert!(
        !session.contains(&b64(&data)[..40]),
        "base64 in the session file"
    );

    // The transcript shows the reference.
    let list = {
        let mut c = w.cmd();
        c.args(["sessions", "list", "--json"]);
        c.output().unwrap()
    };
    let id = serde_json::from_str::<Vec<Value>>(&stdout(&list)).unwrap()[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut c = w.cmd();
    c.args(["sessions", "show", &id]);
    let shown = c.output().unwrap();
    assert!(
        stdout(&shown).contains("[image shot.png 32×20]"),
        "{}",
        stdout(&shown)
    );

    // Sent again as it was, after checking the file's hash.
    assert_ok(&w.exec(&["--continue", "and again"]));
    let image = format!("data:image/png;base64,{}", b64(&data));
    assert!(s.request(1).body_text.contains(&image));

    // A changed file is not sent: a note says why.
    put(&w, "shot.png", &png(32, 21));
    assert_ok(&w.exec(&["--continue", "once more"]));
    let req = s.request(2);
    assert!(!req.body_text.contains("image_url"), "{}", req.body_text);
    assert!(
        req.body_text
            .contains("the file changed since it was attached"),
        "{}",
        req.body_text
    );

    // A missing file is a note too, never a failed resume.
    std::fs::remove_file(w.ws.join("shot.png")).unwrap();
    assert_ok(&w.exec(&["--continue", "and last"]));
    assert!(s.request(3).body_text.contains("the file is gone"));
}

#[test]
fn the_tui_attaches_a_pasted_image_path_and_shows_it_in_the_person_s_cell() {
    use std::time::Duration;
    let wait = Duration::from_secs(20);
    let s = ScriptedServer::openai();
    s.push(Reply::text("A gradient, left to right."));
    let w = World::new(&s);
    let data = png(64, 32);
    put(&w, "shot.png", &data);
    let mut t = w.spawn_tui(120, 30);
    t.ready(wait);
    // A file dragged onto the terminal arrives as a bracketed paste of its path.
    let path = w.ws.join("shot.png");
    t.send_raw(format!("\x1b[200~{}\x1b[201~", path.display()).as_bytes());
    t.expect("the path as a mention", |s| s.contains("@/"), wait);
    t.type_line("what is this?");
    t.expect(
        "the image label in the person's cell",
        |s| s.contains("[image shot.png 64×32]"),
        wait,
    );
    t.expect("the answer", |s| s.contains("A gradient"), wait);
    let req = s.request(0);
    let image = format!("data:image/png;base64,{}", b64(&data));
    assert!(req.body_text.contains(&image));
    t.quit_app(wait);
}

#[test]
fn a_text_only_model_that_takes_over_a_session_gets_notes_instead_of_its_images() {
    let s = ScriptedServer::openai();
    s.push_all([Reply::text("Seen."), Reply::text("Going on.")]);
    let w = World::new(&s);
    put(&w, "shot.png", &png(8, 8));
    assert_ok(&w.exec(&["look at @shot.png"]));
    let mut c = w.cmd();
    c.env("MODEL", "gpt-3.5-turbo")
        .args(["exec", "--continue", "and now?"]);
    let o = support::rein::run_with_timeout(c, std::time::Duration::from_secs(60));
    assert_ok(&o);
    let req = s.request(1);
    assert_eq!(req.body["model"], "gpt-3.5-turbo");
    assert!(!req.body_text.contains("image_url"), "{}", req.body_text);
    assert!(
        req.body_text
            .contains("is not sent again: the model gpt-3.5-turbo does not accept images"),
        "{}",
        req.body_text
    );
}

#[test]
fn the_tui_shows_a_resumed_image_as_its_reference() {
    use std::time::Duration;
    let wait = Duration::from_secs(20);
    let s = ScriptedServer::anthropic();
    s.push(Reply::text("A small picture."));
    let w = World::new(&s);
    put(&w, "shot.png", &png(30, 10));
    assert_ok(&w.exec(&["look at @shot.png"]));
    let mut t = support::pty::Pty::spawn(w.pty_command(&["--continue"]), 100, 30);
    let screen = t.expect(
        "the resumed message with its image",
        |s| s.contains("look at @shot.png") && s.contains("[image shot.png 30×10]"),
        wait,
    );
    assert!(screen.contains("A small picture."), "{screen}");
    t.quit_app(wait);
}

#[test]
fn a_request_carries_the_newest_twenty_images_and_a_message_at_most_twenty() {
    let s = ScriptedServer::openai();
    s.push_all([Reply::text("Fifteen."), Reply::text("Ten more.")]);
    let w = World::new(&s);
    let mention = |range: std::ops::Range<u32>| {
        range
            .map(|i| {
                put(&w, &format!("p{i}.png"), &png(4 + i, 4));
                format!("@p{i}.png")
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let too_many = mention(0..21);
    let o = w.exec(&[&too_many]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("mentions 21 images; rein sends at most 20"),
        "{}",
        stderr(&o)
    );
    assert_eq!(s.request_count(), 0);

    assert_ok(&w.exec(&[&mention(0..15)]));
    assert_eq!(
        s.request(0).body_text.matches("\"image_url\":{").count(),
        15
    );
    assert_ok(&w.exec(&["--continue", &mention(15..25)]));
    let req = s.request(1);
    assert_eq!(req.body_text.matches("\"image_url\":{").count(), 20);
    // The five oldest are notes; the newest all go.
    assert_eq!(
        req.body_text
            .matches("is not sent again: newer images fill what one request may carry")
            .count(),
        5,
        "{}",
        req.body_text
    );
    assert!(
        req.body_text
            .contains("[image p4.png 8×4] was attached here but is not sent")
    );
    assert!(
        !req.body_text
            .contains("[image p5.png 9×4] was attached here")
    );
}
