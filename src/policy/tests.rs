//! Rule ordering, sources, path checks, session rules and `always_rule`.

use super::*;
use std::path::PathBuf;

fn rule(tool: &str, pattern: &str, action: Action, source: RuleSource) -> Rule {
    Rule::new(tool, pattern, action, source).expect("valid glob")
}

fn user(pattern: &str, action: Action) -> Rule {
    rule("bash", pattern, action, RuleSource::User)
}

fn path(display: &str, inside: bool, protected: bool) -> ResolvedPath {
    let path = if inside {
        PathBuf::from("/work/proj").join(display)
    } else {
        PathBuf::from(display)
    };
    ResolvedPath {
        path,
        display: display.to_string(),
        inside_workspace: inside,
        protected,
    }
}

#[test]
fn every_built_in_rule_compiles() {
    assert_eq!(
        Policy::new(Vec::new(), false).rules.len(),
        DEFAULT_BASH.len()
    );
}

#[test]
fn explain_names_verdict_part_and_rule() {
    let policy = Policy::new(Vec::new(), false);
    assert_eq!(
        explain(&policy.check_bash("rm -rf /")),
        "deny: rm -rf / (rule \"rm *\", defaults)"
    );
    assert_eq!(
        explain(&policy.check_bash("make")),
        "ask: make (no rule matched (default ask))"
    );
    assert_eq!(
        explain(&policy.check_bash("git status")),
        "allow: git status (rule \"git status*\", defaults)"
    );
    assert_eq!(explain(&policy.check_bash("")), "allow: (runs no command)");
}

#[test]
fn the_last_matching_rule_wins_and_config_follows_defaults() {
    let policy = Policy::new(
        vec![
            user("rm -rf build*", Action::Allow),
            user("rm -rf build/keep*", Action::Deny),
            user("make*", Action::Allow),
        ],
        false,
    );
    let v = policy.check_bash("rm -rf build/out");
    assert_eq!(v.action, Action::Allow);
    assert_eq!(v.reason, "rule \"rm -rf build*\", user config");
    assert_eq!(
        policy.check_bash("rm -rf build/keep/x").action,
        Action::Deny
    );
    assert_eq!(policy.check_bash("rm -rf src").action, Action::Deny);
    assert_eq!(policy.check_bash("make -j4").action, Action::Allow);

    let project = Policy::new(
        vec![rule(
            "bash",
            "cargo test*",
            Action::Ask,
            RuleSource::Project,
        )],
        false,
    );
    let v = project.check_bash("cargo test -q");
    assert_eq!(
        (v.action, v.reason.as_str()),
        (Action::Ask, "rule \"cargo test*\", project config")
    );
}

#[test]
fn rules_for_other_tools_do_not_rate_commands() {
    let policy = Policy::new(
        vec![rule("read_file", "*", Action::Deny, RuleSource::User)],
        false,
    );
    assert_eq!(policy.check_bash("ls").action, Action::Allow);
}

#[test]
fn the_strictest_part_decides() {
    let policy = Policy::new(Vec::new(), false);
    let v = policy.check_bash("ls && make && rm x && git push");
    assert_eq!((v.action, v.part.as_str()), (Action::Deny, "rm x"));
    let v = policy.check_bash("ls && make && npm test");
    assert_eq!((v.action, v.part.as_str()), (Action::Ask, "make"));
    let v = policy.check_bash("ls | wc -l");
    assert_eq!(v.action, Action::Allow);
    assert!(v.reason.ends_with("all 2 commands allowed"), "{}", v.reason);
}

#[test]
fn opaque_parts_ask_even_when_a_rule_allows_them() {
    let policy = Policy::new(vec![user("sh*", Action::Allow)], false);
    let v = policy.check_bash("ls > listing.txt");
    assert_eq!(v.action, Action::Ask);
    assert_eq!(v.reason, "output redirection to a file: > listing.txt");
    assert_eq!(policy.check_bash("sh -c \"$x\"").action, Action::Ask);
    // A deny is not softened to ask by being opaque.
    assert_eq!(policy.check_bash("rm $x").action, Action::Deny);
}

#[test]
fn deny_rules_see_through_paths_outside_system_dirs() {
    let policy = Policy::new(Vec::new(), false);
    let v = policy.check_bash("./rm -rf x");
    assert_eq!(v.action, Action::Deny);
    assert!(v.reason.contains("as `rm -rf x`"), "{}", v.reason);
    assert_eq!(
        policy.check_bash("~/bin/curl https://x").action,
        Action::Deny
    );
    // ...but an allow rule does not: `./ls` is some other program.
    assert_eq!(policy.check_bash("/tmp/evil/ls").action, Action::Ask);
}

#[test]
fn session_rules_allow_but_never_soften_a_deny() {
    let mut policy = Policy::new(vec![user("make install*", Action::Deny)], false);
    assert_eq!(policy.check_bash("make test").action, Action::Ask);
    policy.add_session_rule(rule("bash", "make*", Action::Allow, RuleSource::Session));
    let v = policy.check_bash("make test");
    assert_eq!(
        (v.action, v.reason.as_str()),
        (Action::Allow, "rule \"make*\", this session")
    );
    assert_eq!(policy.check_bash("make install").action, Action::Deny);
    policy.add_session_rule(rule("bash", "rm*", Action::Allow, RuleSource::Session));
    assert_eq!(policy.check_bash("rm -rf x").action, Action::Deny);
    policy.add_session_rule(rule("bash", "*", Action::Allow, RuleSource::Session));
    assert_eq!(policy.check_bash("ls > out").action, Action::Ask);
}

#[test]
fn always_rule_is_the_command_prefix_of_the_asking_part() {
    let pattern = |cmd: &str| Policy::always_rule("bash", cmd).map(|r| r.pattern);
    assert_eq!(pattern("cargo test -q").as_deref(), Some("cargo test*"));
    assert_eq!(pattern("cargo run -q").as_deref(), Some("cargo run*"));
    assert_eq!(pattern("npm run build").as_deref(), Some("npm run build*"));
    assert_eq!(pattern("make").as_deref(), Some("make*"));
    assert_eq!(
        pattern("git commit -m 'fix: x'").as_deref(),
        Some("git commit*")
    );
    assert_eq!(
        pattern("ls && make -j4 && npm test").as_deref(),
        Some("make*")
    );
    assert_eq!(
        pattern("python3 x[1].py").as_deref(),
        Some("python3 x[[]1[]].py*")
    );
    // Denied, opaque or nothing to ask about: no rule.
    assert_eq!(pattern("rm -rf x"), None);
    assert_eq!(pattern("make && rm x"), None);
    assert_eq!(pattern("ls > out"), None);
    assert_eq!(pattern("$CMD x"), None);
    assert_eq!(pattern(""), None);

    let r = Policy::always_rule("bash", "cargo run -q").expect("rule");
    assert_eq!(
        (r.tool.as_str(), r.action, r.source.clone()),
        ("bash", Action::Allow, RuleSource::Session)
    );
    assert!(r.matches("cargo run --release"));
    assert!(!r.matches("cargo publish"));
}

#[test]
fn always_rule_for_a_compound_command_stops_asking_for_that_part() {
    let command = "make build && ./scripts/deploy.sh";
    let mut policy = Policy::new(Vec::new(), false);
    assert_eq!(policy.check_bash(command).part, "make build");
    policy.add_session_rule(Policy::always_rule("bash", command).expect("rule"));
    let v = policy.check_bash(command);
    assert_eq!(
        (v.action, v.part.as_str()),
        (Action::Ask, "./scripts/deploy.sh")
    );
}

#[test]
fn path_defaults() {
    let policy = Policy::new(Vec::new(), false);
    let auto = Policy::new(Vec::new(), true);
    let src = path("src/main.rs", true, false);
    let etc = path("/etc/hosts", false, false);
    let hook = path(".git/hooks/pre-commit", true, true);
    assert_eq!(
        policy.check_path("write_file", true, &src).action,
        Action::Ask
    );
    assert_eq!(
        auto.check_path("write_file", true, &src).action,
        Action::Allow
    );
    assert_eq!(
        auto.check_path("str_replace", true, &hook).action,
        Action::Ask
    );
    assert_eq!(
        auto.check_path("write_file", true, &etc).action,
        Action::Deny
    );
    assert_eq!(
        policy.check_path("read_file", false, &src).action,
        Action::Allow
    );
    assert_eq!(
        policy.check_path("read_file", false, &hook).action,
        Action::Allow
    );
    assert_eq!(
        policy.check_path("read_file", false, &etc).action,
        Action::Ask
    );
    let v = policy.check_path("write_file", true, &etc);
    assert_eq!(
        explain(&v),
        "deny: /etc/hosts (writes outside the workspace are never allowed)"
    );
}

#[test]
fn path_rules_override_defaults_except_outside_writes() {
    let policy = Policy::new(
        vec![
            rule("read_file", "*.env", Action::Deny, RuleSource::Project),
            rule("edit", "docs/*", Action::Allow, RuleSource::User),
            rule("write_file", "/etc/*", Action::Allow, RuleSource::User),
            rule("read_file", "/usr/share/*", Action::Allow, RuleSource::User),
        ],
        false,
    );
    let v = policy.check_path("read_file", false, &path("config/.env", true, false));
    assert_eq!(
        (v.action, v.reason.as_str()),
        (Action::Deny, "rule \"*.env\", project config")
    );
    // `edit` covers both edit tools, not reads.
    assert_eq!(
        policy
            .check_path("write_file", true, &path("docs/a.md", true, false))
            .action,
        Action::Allow
    );
    assert_eq!(
        policy
            .check_path("str_replace", true, &path("docs/a.md", true, false))
            .action,
        Action::Allow
    );
    assert_eq!(
        policy
            .check_path("write_file", true, &path("src/a.rs", true, false))
            .action,
        Action::Ask
    );
    // Globs also match the absolute path.
    let abs = rule("edit", "/work/proj/src/*", Action::Allow, RuleSource::User);
    let by_abs = Policy::new(vec![abs], false);
    assert_eq!(
        by_abs
            .check_path("str_replace", true, &path("src/a.rs", true, false))
            .action,
        Action::Allow
    );
    assert_eq!(
        policy
            .check_path("write_file", true, &path("/etc/hosts", false, false))
            .action,
        Action::Deny
    );
    assert_eq!(
        policy
            .check_path("read_file", false, &path("/usr/share/dict", false, false))
            .action,
        Action::Allow
    );
}

#[test]
fn always_rule_for_edits_allows_exactly_that_file() {
    let mut policy = Policy::new(Vec::new(), false);
    let rule = Policy::always_rule("write_file", "src/[id]*.rs").expect("rule");
    assert_eq!(rule.tool, "edit");
    policy.add_session_rule(rule);
    let exact = path("src/[id]*.rs", true, false);
    let other = path("src/i.rs", true, false);
    assert_eq!(
        policy.check_path("str_replace", true, &exact).action,
        Action::Allow
    );
    assert_eq!(
        policy.check_path("write_file", true, &other).action,
        Action::Ask
    );
    // A session rule cannot open a write outside the workspace.
    policy.add_session_rule(Policy::always_rule("edit", "/etc/hosts").expect("rule"));
    assert_eq!(
        policy
            .check_path("write_file", true, &path("/etc/hosts", false, false))
            .action,
        Action::Deny
    );
    let read = Policy::always_rule("read_file", "/etc/hosts").expect("rule");
    policy.add_session_rule(read);
    assert_eq!(
        policy
            .check_path("read_file", false, &path("/etc/hosts", false, false))
            .action,
        Action::Allow
    );
    assert!(Policy::always_rule("todo_write", "x").is_none());
}

#[test]
fn mcp_tools_ask_by_default_and_rules_match_name_globs_and_arguments() {
    let args = serde_json::json!({"repo": "my-org/app", "title": "bug"});
    type Rules<'a> = &'a [(&'a str, &'a str, Action)];
    let cases: &[(Rules, &str, Action)] = &[
        (&[], "mcp__github__create_issue", Action::Ask),
        (
            &[("mcp__github__*", "*", Action::Allow)],
            "mcp__github__create_issue",
            Action::Allow,
        ),
        (
            &[("mcp__github__*", "*", Action::Allow)],
            "mcp__other__create_issue",
            Action::Ask,
        ),
        (
            &[
                ("mcp__github__*", "*", Action::Allow),
                ("mcp__github__create_issue", "*", Action::Deny),
            ],
            "mcp__github__create_issue",
            Action::Deny,
        ),
        (
            &[("mcp__github__*", "*\"repo\":\"my-org/*", Action::Deny)],
            "mcp__github__create_issue",
            Action::Deny,
        ),
        (
            &[("mcp__github__*", "*\"repo\":\"else/*", Action::Deny)],
            "mcp__github__create_issue",
            Action::Ask,
        ),
        // A bash rule never rates an MCP tool.
        (
            &[("bash", "*", Action::Allow)],
            "mcp__github__create_issue",
            Action::Ask,
        ),
    ];
    for (rules, tool, want) in cases {
        let rules = rules
            .iter()
            .map(|(t, p, a)| rule(t, p, *a, RuleSource::User))
            .collect();
        let v = Policy::new(rules, false).check_tool(tool, &args);
        assert_eq!(v.action, *want, "{tool} with {v:?}");
    }
}

#[test]
fn always_for_an_mcp_tool_allows_that_tool_only_and_never_softens_a_deny() {
    let args = serde_json::json!({});
    let always = Policy::always_rule("mcp__gh__list", "").expect("a session rule");
    let mut policy = Policy::new(
        vec![rule("mcp__gh__delete", "*", Action::Deny, RuleSource::User)],
        false,
    );
    policy.add_session_rule(always);
    policy.add_session_rule(Policy::always_rule("mcp__gh__delete", "").unwrap());
    assert_eq!(
        policy.check_tool("mcp__gh__list", &args).action,
        Action::Allow
    );
    assert_eq!(
        policy.check_tool("mcp__gh__list_all", &args).action,
        Action::Ask
    );
    assert_eq!(
        policy.check_tool("mcp__gh__delete", &args).action,
        Action::Deny
    );
}
