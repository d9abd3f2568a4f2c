use super::*;
use image::{ImageFormat, RgbaImage};

fn png(w: u32, h: u32) -> Vec<u8> {
    let img = RgbaImage::from_fn(w, h, |x, y| {
        image::Rgba([(x % 256) as u8, (y % 256) as u8, 90, 255])
    });
    let mut out = Vec::new();
    image::DynamicImage::ImageRgba8(img)
        .write_to(&mut std::io::Cursor::new(&mut out), ImageFormat::Png)
        .unwrap();
    out
}

#[test]
fn a_small_image_is_sent_as_it_is() {
    let data = png(64, 32);
    let img = prepare(&data, "shot.png", None).unwrap();
    assert_eq!(img.bytes(), Some(&data[..]));
    assert_eq!(img.meta.media_type, MediaType::Png);
    assert_eq!((img.meta.width, img.meta.height), (64, 32));
    assert_eq!(img.meta.sha256, sha256_hex(&data));
    assert_eq!(img.meta.original, None);
    assert_eq!(img.meta.label(), "[image shot.png 64×32]");
    assert!(
        img.data_url()
            .unwrap()
            .starts_with("data:image/png;base64,iVBORw0KGgo")
    );
}

#[test]
fn a_large_image_is_downscaled_to_the_longest_side() {
    let data = png(3000, 1500);
    let img = prepare(&data, "big.png", None).unwrap();
    assert_eq!((img.meta.width, img.meta.height), (2000, 1000));
    let original = img.meta.original.clone().unwrap();
    assert_eq!((original.width, original.height), (3000, 1500));
    let sent = image::load_from_memory(img.bytes().unwrap()).unwrap();
    assert_eq!((sent.width(), sent.height()), (2000, 1000));
    assert!(img.bytes().unwrap().len() <= MAX_BYTES);
    assert_eq!(img.meta.sha256, sha256_hex(img.bytes().unwrap()));
}

#[test]
fn corrupt_and_unsupported_files_are_clear_errors() {
    let mut data = png(40, 40);
    data.truncate(60);
    let err = prepare(&data, "cut.png", None).unwrap_err().0;
    assert!(err.contains("cut.png cannot be read as image/png"), "{err}");
    let err = prepare(b"hello, not an image", "fake.png", None)
        .unwrap_err()
        .0;
    assert!(err.contains("not an image rein can send"), "{err}");
    let bmp = {
        let mut out = Vec::new();
        image::DynamicImage::ImageRgb8(image::RgbImage::new(4, 4))
            .write_to(&mut std::io::Cursor::new(&mut out), ImageFormat::Bmp)
            .ok();
        out
    };
    // Without the bmp codec the header is still known by its magic bytes.
    let bmp = if bmp.is_empty() {
        b"BM\0\0\0\0\0\0\0\0".to_vec()
    } else {
        bmp
    };
    let err = prepare(&bmp, "x.bmp", None).unwrap_err().0;
    assert!(err.contains("is a BMP image"), "{err}");
}

#[test]
fn a_gif_goes_as_a_png_of_its_first_frame() {
    let mut out = Vec::new();
    image::DynamicImage::ImageRgba8(RgbaImage::new(10, 8))
        .write_to(&mut std::io::Cursor::new(&mut out), ImageFormat::Gif)
        .unwrap();
    let img = prepare(&out, "anim.gif", None).unwrap();
    assert_eq!(img.meta.media_type, MediaType::Png);
    assert_eq!((img.meta.width, img.meta.height), (10, 8));
    assert!(img.meta.stored());
}

#[test]
fn serialised_it_is_a_reference_without_the_bytes() {
    let data = png(20, 10);
    let img = prepare(&data, "s.png", Some("/w/s.png".into())).unwrap();
    let json = serde_json::to_string(&img).unwrap();
    assert!(!json.contains(&img.base64().unwrap()), "{json}");
    assert!(json.contains(&img.meta.sha256));
    let back: Image = serde_json::from_str(&json).unwrap();
    assert_eq!(back.meta, img.meta);
    assert!(back.bytes().is_none());
    assert!(back.note().contains("[image s.png 20×10]"));
}

#[test]
fn names_are_one_visible_line() {
    let name = display_name(std::path::Path::new("/tmp/evil\u{1b}[2J\nname.png"));
    assert!(!name.contains('\u{1b}') && !name.contains('\n'), "{name:?}");
    assert!(name.ends_with("name.png"), "{name:?}");
}

#[test]
fn the_store_keeps_bytes_once_and_checks_their_hash() {
    let dir = tempfile::tempdir().unwrap();
    let data = png(3000, 10);
    let img = prepare(&data, "wide.png", None).unwrap();
    let bytes = img.bytes().unwrap();
    store::put(dir.path(), &img.meta, bytes).unwrap();
    store::put(dir.path(), &img.meta, bytes).unwrap();
    assert_eq!(
        std::fs::read_dir(store::dir(dir.path())).unwrap().count(),
        1
    );
    assert_eq!(store::get(dir.path(), &img.meta).unwrap(), bytes);
    std::fs::write(store::path_of(dir.path(), &img.meta), b"tampered").unwrap();
    assert!(
        store::get(dir.path(), &img.meta)
            .unwrap_err()
            .contains("changed")
    );
    let mut crafted = img.meta.clone();
    crafted.sha256 = "../../etc/passwd".into();
    assert!(
        store::get(dir.path(), &crafted)
            .unwrap_err()
            .contains("not a sha256")
    );
}

mod wire {
    use super::*;
    use crate::llm::{Message, Reasoning, Request, anthropic, openai, responses};
    use serde_json::json;

    fn image() -> Image {
        prepare(&png(2, 2), "s.png", None).unwrap()
    }

    fn request(messages: Vec<Message>, reminder: Option<&str>) -> Request {
        Request {
            model: "m".into(),
            system: String::new(),
            messages,
            tools: Vec::new(),
            reminder: reminder.map(str::to_owned),
            max_tokens: 0,
            force_tool: false,
            mark: None,
        }
    }

    fn history(img: &Image) -> Vec<Message> {
        vec![
            Message::User {
                content: "look".into(),
            },
            Message::UserImage { image: img.clone() },
        ]
    }

    #[test]
    fn openai_chat_parts_text_then_image_then_the_reminder() {
        let img = image();
        let body = openai::build_body(&request(history(&img), Some("R")));
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": img.data_url().unwrap()}},
                {"type": "text", "text": "R"},
            ]}])
        );
    }

    #[test]
    fn anthropic_blocks_image_then_text() {
        let img = image();
        let body = anthropic::build_body(&request(history(&img), None));
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                    "data": img.base64().unwrap()}},
                {"type": "text", "text": "look", "cache_control": {"type": "ephemeral"}},
            ]}])
        );
    }

    #[test]
    fn responses_items_text_then_image_with_the_reminder_after_it() {
        let img = image();
        let body = responses::build_body(&request(history(&img), Some("R")), &Reasoning::default());
        assert_eq!(
            body["input"],
            json!([
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "look"}]},
                {"type": "message", "role": "user", "content": [
                    {"type": "input_image", "image_url": img.data_url().unwrap()},
                    {"type": "input_text", "text": "R"},
                ]},
            ])
        );
    }

    #[test]
    fn an_image_without_its_bytes_is_a_note_in_every_format() {
        let mut img = image();
        img.drop_bytes("the file changed since it was attached");
        let note = "[image s.png 2×2] was attached here but is not sent again: the file changed \
                    since it was attached.";
        let req = request(history(&img), None);
        assert_eq!(
            openai::build_body(&req)["messages"][0]["content"],
            json!(format!("look\n\n{note}"))
        );
        let an = anthropic::build_body(&req);
        assert_eq!(an["messages"][0]["content"][1]["text"], note);
        assert_eq!(an["messages"][0]["content"][0]["text"], "look");
        let re = responses::build_body(&req, &Reasoning::default());
        assert_eq!(re["input"][1]["content"][0]["text"], note);
    }
}

mod resume {
    use super::*;
    use crate::llm::Message;
    use crate::protocol::Event;
    use crate::session_store::{Entry, Header, LoadedSession, rebuild};

    fn session(entries: Vec<Entry>) -> crate::session_store::Resumed {
        rebuild(LoadedSession {
            path: "/d/s.jsonl".into(),
            header: Header::new("s1", std::path::Path::new("/w"), "m", "openai"),
            entries,
            notices: Vec::new(),
        })
    }

    fn meta() -> ImageRef {
        prepare(&png(12, 7), "s.png", Some("/w/s.png".into()))
            .unwrap()
            .meta
    }

    #[test]
    fn the_view_shows_the_label_and_the_context_holds_the_reference() {
        let r = session(vec![Entry::user("look at @s.png"), Entry::image(meta())]);
        assert_eq!(
            r.view,
            vec![
                Event::UserMessage {
                    text: "look at @s.png".into()
                },
                Event::ImagesAttached {
                    labels: vec!["[image s.png 12×7]".into()]
                }
            ]
        );
        match &r.messages[..] {
            [Message::User { content }, Message::UserImage { image }] => {
                assert_eq!(content, "look at @s.png");
                assert_eq!(image.meta, meta());
                assert!(matches!(image.payload, Payload::NotLoaded));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn after_a_refusal_the_images_before_it_stay_notes() {
        let r = session(vec![
            Entry::user("look at @s.png"),
            Entry::image(meta()),
            Entry::error(format!("HTTP 400: {}: no vision", support::REFUSED)),
        ]);
        let Some(Message::UserImage { image }) = r.messages.get(1) else {
            panic!("{:?}", r.messages)
        };
        assert!(
            image.note().ends_with("the model refused images."),
            "{}",
            image.note()
        );
    }
}
