use super::answer::Ran;
use super::*;

fn ran(code: i32, stdout: &str, stderr: &str) -> Ran {
    Ran {
        code: Some(code),
        stdout: stdout.into(),
        stderr: stderr.into(),
        failed: None,
    }
}

#[test]
fn exit_two_blocks_with_stderr_and_other_codes_are_ignored_failures() {
    let a = Answer::read(HookEvent::PreToolUse, "h", &ran(2, "", "no rm here\n"));
    assert_eq!(a.block.as_deref(), Some("no rm here"));
    assert_eq!(a.pre_tool_permission().map(|p| p.0), Some(Permission::Deny));
    let a = Answer::read(HookEvent::PreToolUse, "h", &ran(1, "", "boom\n"));
    assert_eq!(a.block, None);
    assert_eq!(a.permission, None);
    assert!(a.notices[0].contains("exit code 1") && a.notices[0].contains("boom"));
    let a = Answer::read(HookEvent::PreToolUse, "h", &ran(0, "{not json", ""));
    assert!(a.block.is_none() && a.notices[0].contains("JSON"));
}

#[test]
fn claude_code_json_fields_are_read() {
    let out = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"ok by hook"}}"#;
    let a = Answer::read(HookEvent::PreToolUse, "h", &ran(0, out, ""));
    assert_eq!(a.permission, Some((Permission::Allow, "ok by hook".into())));
    let out = r#"{"decision":"block","reason":"tests fail"}"#;
    let a = Answer::read(HookEvent::PostToolUse, "h", &ran(0, out, ""));
    assert_eq!(a.block.as_deref(), Some("tests fail"));
    let out = r#"{"hookSpecificOutput":{"additionalContext":"branch is main"}}"#;
    let a = Answer::read(HookEvent::UserPromptSubmit, "h", &ran(0, out, ""));
    assert_eq!(a.context.as_deref(), Some("branch is main"));
    // Plain stdout is context for these two events only.
    let a = Answer::read(HookEvent::SessionStart, "h", &ran(0, "hello\n", ""));
    assert_eq!(a.context.as_deref(), Some("hello"));
    let a = Answer::read(HookEvent::PreToolUse, "h", &ran(0, "hello\n", ""));
    assert_eq!(a.context, None);
    let out = r#"{"continue":false,"stopReason":"frozen"}"#;
    let a = Answer::read(HookEvent::UserPromptSubmit, "h", &ran(0, out, ""));
    assert_eq!(a.block.as_deref(), Some("frozen"));
}

#[test]
fn merged_answers_take_the_strictest_permission() {
    let p = |p: Permission| Answer {
        permission: Some((p, format!("{p:?}"))),
        ..Answer::default()
    };
    let m = Answer::merge(vec![
        p(Permission::Allow),
        p(Permission::Deny),
        p(Permission::Ask),
    ]);
    assert_eq!(m.permission.map(|p| p.0), Some(Permission::Deny));
    let m = Answer::merge(vec![p(Permission::Allow), p(Permission::Ask)]);
    assert_eq!(m.permission.map(|p| p.0), Some(Permission::Ask));
    let m = Answer::merge(vec![
        Answer {
            context: Some("a".into()),
            ..Answer::default()
        },
        Answer {
            context: Some("b".into()),
            block: Some("no".into()),
            ..Answer::default()
        },
    ]);
    assert_eq!(m.context.as_deref(), Some("a\nb"));
    assert_eq!(m.block.as_deref(), Some("no"));
}

#[test]
fn claude_matchers_see_claude_tool_names() {
    let spec = |origin: HookOrigin, m: &str| HookSpec {
        event: HookEvent::PreToolUse,
        matcher: Matcher::new(m).unwrap(),
        command: "true".into(),
        timeout: DEFAULT_TIMEOUT,
        sandboxed: true,
        origin,
    };
    let claude = spec(
        HookOrigin::Claude(".claude/settings.json".into()),
        "Bash|Write",
    );
    assert!(claude.applies("bash") && claude.applies("write_file"));
    assert!(!claude.applies("read_file"));
    assert_eq!(claude.tool_name("bash"), "Bash");
    let own = spec(HookOrigin::User("c.toml".into()), "Bash");
    assert!(!own.applies("bash"));
    assert_eq!(own.tool_name("bash"), "bash");
}

#[test]
fn project_hooks_wait_for_trust_and_a_changed_hook_asks_again() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    std::fs::create_dir_all(ws.join(".claude")).unwrap();
    let write = |cmd: &str| {
        std::fs::write(
            ws.join(".claude/settings.json"),
            format!(
                r#"{{"hooks":{{"PreToolUse":[{{"matcher":"Bash","hooks":[{{"type":"command","command":"{cmd}","timeout":5}}]}}]}}}}"#
            ),
        )
        .unwrap()
    };
    write("echo one");
    let store = crate::trust::TrustStore::in_data_dir(&ws.join("data"));
    let trust = crate::trust::ProjectTrust::load(&store, ws, None);
    let d = config::derive(None, None, ws, &trust).unwrap();
    assert!(d.hooks.is_empty());
    let item = d.refused[0].trust.clone().unwrap();
    assert!(item.summary.contains("echo one"), "{}", item.summary);
    let mut trust = trust;
    trust.approve_now(std::slice::from_ref(&item));
    let d = config::derive(None, None, ws, &trust).unwrap();
    assert_eq!(d.hooks.len(), 1);
    assert_eq!(d.hooks[0].timeout, Duration::from_secs(5));
    assert!(d.hooks[0].sandboxed);
    write("echo two");
    let d = config::derive(None, None, ws, &trust).unwrap();
    assert!(d.hooks.is_empty(), "a changed hook must ask again");
}

#[test]
fn only_the_persons_config_runs_a_hook_outside_the_sandbox() {
    let toml = "[[PreToolUse]]\nmatcher = \"bash\"\ncommand = \"true\"\nsandbox = false\n";
    let tables: config::HookTables = toml::from_str(toml).unwrap();
    let user = config::user_hooks(&tables, Path::new("config.toml")).unwrap();
    assert!(!user[0].sandboxed);
    let dir = tempfile::tempdir().unwrap();
    let store = crate::trust::TrustStore::in_data_dir(&dir.path().join("data"));
    let trust =
        crate::trust::ProjectTrust::load(&store, dir.path(), Some(crate::trust::TrustedBy::Flag));
    let d = config::derive(
        None,
        Some((&tables, Path::new("p.toml"))),
        dir.path(),
        &trust,
    )
    .unwrap();
    assert!(d.hooks[0].sandboxed);
    assert!(
        d.refused
            .iter()
            .any(|r| r.reason.contains("always run in the sandbox"))
    );
    let bad: config::HookTables = toml::from_str("[[PreToolUze]]\ncommand = \"x\"\n").unwrap();
    assert!(
        config::user_hooks(&bad, Path::new("c.toml"))
            .unwrap_err()
            .contains("PreToolUse")
    );
}

fn unconfined(dir: &Path) -> Arc<Sandbox> {
    Arc::new(Sandbox::off(dir.to_path_buf(), dir.join("tmp")))
}

fn spec(command: &str, timeout_secs: u64) -> HookSpec {
    HookSpec {
        event: HookEvent::PreToolUse,
        matcher: Matcher::any(),
        command: command.into(),
        timeout: Duration::from_secs(timeout_secs),
        sandboxed: true,
        origin: HookOrigin::User("config.toml".into()),
    }
}

#[tokio::test]
async fn a_hook_that_ignores_a_large_input_does_not_hang() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = unconfined(dir.path());
    let input = "x".repeat(4 << 20);
    let cancel = CancellationToken::new();
    let ran = run::run(&spec("echo fine", 20), &input, &sandbox, &cancel).await;
    assert_eq!(ran.code, Some(0), "{ran:?}");
    assert_eq!(ran.stdout.trim(), "fine");
}

#[tokio::test]
async fn an_interrupt_stops_a_running_hook() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = unconfined(dir.path());
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    let marker = dir.path().join("started");
    let seen = marker.clone();
    // Interrupts once the hook is running.
    tokio::spawn(async move {
        while !seen.exists() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        stop.cancel();
    });
    let started = std::time::Instant::now();
    let command = format!("touch {}; sleep 30", marker.display());
    let ran = run::run(&spec(&command, 60), "{}", &sandbox, &cancel).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        ran.failed
            .as_deref()
            .is_some_and(|f| f.contains("interrupt")),
        "{ran:?}"
    );
}

#[tokio::test]
async fn matching_hooks_run_and_their_answers_merge() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Hooks::new(
        vec![
            HookSpec {
                matcher: Matcher::new("bash").unwrap(),
                ..spec("cat > /dev/null; echo 'first says no' >&2; exit 2", 20)
            },
            HookSpec {
                matcher: Matcher::new("read_file").unwrap(),
                ..spec("exit 2", 20)
            },
            spec(
                r#"echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'"#,
                20,
            ),
        ],
        unconfined(dir.path()),
        0,
    );
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let events = EventSink::new(tx);
    let cancel = CancellationToken::new();
    let a = hooks
        .pre_tool_use("bash", json!({"command": "ls"}), &events, &cancel)
        .await;
    assert_eq!(
        a.pre_tool_permission(),
        Some((Permission::Deny, "first says no".into()))
    );
    let a = hooks
        .pre_tool_use("write_file", json!({}), &events, &cancel)
        .await;
    assert_eq!(
        a.pre_tool_permission().map(|p| p.0),
        Some(Permission::Allow)
    );
}
