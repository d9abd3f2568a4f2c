use super::*;
use std::collections::BTreeMap;

/// A workspace in memory; files not listed are missing.
pub(crate) struct Mem(BTreeMap<String, String>);

impl Mem {
    pub(crate) fn new(files: &[(&str, &str)]) -> Mem {
        Mem(files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect())
    }

    /// What the file holds after the proposals' edits, applied as the tools would.
    pub(crate) fn apply(&mut self, props: &[Proposal]) {
        for p in props {
            let path = p.arguments["path"].as_str().unwrap_or_default().to_string();
            match p.tool {
                "write_file" => {
                    let c = p.arguments["content"].as_str().unwrap().to_string();
                    self.0.insert(path, c);
                }
                "str_replace" => {
                    let old = p.arguments["old_str"].as_str().unwrap();
                    let new = p.arguments["new_str"].as_str().unwrap();
                    let text = self.0.get_mut(&path).unwrap();
                    assert_eq!(text.matches(old).count(), 1, "old_str occurs once: {old:?}");
                    *text = text.replacen(old, new, 1);
                }
                _ => {}
            }
        }
    }
}

impl Mem {
    /// The text of a file the test put there or an edit wrote.
    pub(crate) fn text(&self, path: &str) -> String {
        self.0.get(path).cloned().unwrap_or_default()
    }
}

impl Workspace for Mem {
    fn file(&self, path: &str) -> FileState {
        match self.0.get(path) {
            Some(t) => FileState::Text(t.clone()),
            None => FileState::Missing,
        }
    }

    fn sources(&self, lang: Lang) -> Vec<String> {
        self.0
            .keys()
            .filter(|p| Lang::of_path(p) == Some(lang))
            .cloned()
            .collect()
    }
}

const STATS: &str = "\"\"\"Summary statistics.\"\"\"\n\n\ndef mean(values):\n    return sum(values) / len(values)\n\n\ndef summary(values):\n    return {\"n\": len(values), \"mean\": mean(values)}\n\n\nif __name__ == \"__main__\":\n    print(summary([1, 2, 3]))\n    print(summary([]))\n";

#[test]
fn a_function_shown_in_prose_replaces_the_one_of_that_name_and_nothing_else() {
    let mut ws = Mem::new(&[("stats.py", STATS), ("other.py", "def f():\n    pass\n")]);
    let answer = "To fix the `ZeroDivisionError` in the `mean` function, here's the updated \
                  code:\n\n```python\ndef mean(values):\n    if not values:\n        return 0.0\n    \
                  return sum(values) / len(values)\n```\n\nThis keeps the rest.";
    let props = proposals(
        answer,
        "Fix it: the mean of an empty list should be 0.0.",
        &ws,
    );
    assert_eq!(props.len(), 1, "{props:?}");
    assert_eq!(props[0].tool, "str_replace");
    ws.apply(&props);
    let want = STATS.replace(
        "def mean(values):\n",
        "def mean(values):\n    if not values:\n        return 0.0\n",
    );
    assert_eq!(ws.0["stats.py"], want);
    // The replacement names only what changed, not the whole file.
    assert!(
        !props[0].arguments["old_str"]
            .as_str()
            .unwrap()
            .contains("summary")
    );
}

#[test]
fn a_new_function_is_added_before_the_main_guard_with_its_imports() {
    let mut ws = Mem::new(&[("stats.py", STATS)]);
    let answer = "```python\n# stats.py\nimport math\n\ndef median(values):\n    return sorted(values)[len(values) // 2]\n```";
    let props = proposals(answer, "add median", &ws);
    ws.apply(&props);
    let text = &ws.0["stats.py"];
    assert!(text.contains("import math\n"), "{text}");
    let median = text.find("def median").unwrap();
    assert!(median > text.find("def summary").unwrap());
    assert!(median < text.find("if __name__").unwrap(), "{text}");
    assert!(text.contains("def mean(values):\n    return sum(values) / len(values)"));
}

#[test]
fn a_test_class_is_merged_method_by_method_and_keeps_the_other_tests() {
    let tests = "import unittest\n\nfrom mathops import add, sub\n\n\nclass MathopsTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_sub(self):\n        self.assertEqual(sub(5, 3), 2)\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n";
    let mut ws = Mem::new(&[
        ("test_mathops.py", tests),
        ("mathops.py", "def add(a, b):\n    return a + b\n"),
    ]);
    let answer = "Here is test_mathops.py:\n```python\nimport unittest\nfrom mathops import mul\n\nclass MathopsTest(unittest.TestCase):\n  def test_mul(self):\n    self.assertEqual(mul(2, 3), 6)\n```";
    let props = proposals(answer, "Add mul and a test", &ws);
    ws.apply(&props);
    let text = &ws.0["test_mathops.py"];
    for must in [
        "def test_add",
        "def test_sub",
        "    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)",
        "from mathops import mul\n",
    ] {
        assert!(text.contains(must), "{must} missing in:\n{text}");
    }
    assert!(text.find("def test_mul").unwrap() < text.find("if __name__").unwrap());
}

#[test]
fn a_new_file_the_answer_names_is_written_and_a_run_command_follows() {
    let ws = Mem::new(&[("notes.txt", "a b c\n")]);
    let answer = "Here is `count_words.py`:\n\n```python\nwith open('notes.txt') as f:\n    print(len(f.read().split()))\n```\n\nRun it:\n\n```bash\n$ python3 count_words.py\n```";
    let props = proposals(
        answer,
        "Write a Python script count_words.py that prints the number of words in notes.txt.",
        &ws,
    );
    assert_eq!(props.len(), 2, "{props:?}");
    assert_eq!(props[0].tool, "write_file");
    assert_eq!(props[0].arguments["path"], "count_words.py");
    assert_eq!(props[1].tool, "bash");
    assert_eq!(props[1].arguments["command"], "python3 count_words.py");
}

#[test]
fn a_whole_script_the_answer_names_replaces_a_script_without_functions() {
    let old = "#!/usr/bin/env bash\ntotal=1\nwhile read -r n; do\n    total=$((total + n))\ndone < \"$1\"\necho \"$total\"\n";
    let mut ws = Mem::new(&[("sum.sh", old)]);
    let new = "#!/usr/bin/env bash\ntotal=0\nwhile read -r n; do\n    total=$((total + n))\ndone < \"$1\"\necho \"$total\"";
    let answer = format!("Here's the corrected version of `sum.sh`:\n\n```bash\n{new}\n```");
    let props = proposals(&answer, "Fix sum.sh", &ws);
    assert_eq!(props.len(), 1, "{props:?}");
    assert_eq!(props[0].arguments["old_str"], "total=1\n");
    ws.apply(&props);
    assert_eq!(ws.0["sum.sh"], format!("{new}\n"));
}

#[test]
fn fragments_illustrations_and_unknown_files_change_nothing() {
    let ws = Mem::new(&[("stats.py", STATS)]);
    // A fragment without definitions is not taken for the whole file.
    let fragment = "In stats.py:\n```python\nreturn 0.0\n```";
    assert!(proposals(fragment, "fix stats.py", &ws).is_empty());
    // An example for a file nobody named, with no definition the workspace has.
    let example = "For example:\n```python\ndef port():\n    return 8080\n```";
    assert!(proposals(example, "fix the port", &ws).is_empty());
    // A block identical to what the file holds is no edit.
    let same = "```python\ndef mean(values):\n    return sum(values) / len(values)\n```";
    assert!(proposals(same, "fix it", &ws).is_empty());
    // An untyped block after a sentence naming a script is not taken for the script.
    let ws_sh = Mem::new(&[("run.sh", "echo 1\necho 2\n")]);
    let plan = "The plan for `run.sh`:\n```\n{\"todos\": []}\n```";
    assert!(proposals(plan, "fix run.sh", &ws_sh).is_empty());
    // Paths outside the workspace are never targets.
    let outside = "```python\n# ../evil.py\nprint(1)\n```\n```python\n# /etc/x.py\nprint(1)\n```";
    assert!(proposals(outside, "fix it", &ws).is_empty());
}

#[test]
fn two_files_defining_the_same_name_make_the_target_ambiguous() {
    let ws = Mem::new(&[
        ("a.py", "def run():\n    pass\n"),
        ("b.py", "def run():\n    pass\n"),
    ]);
    let answer = "```python\ndef run():\n    return 1\n```";
    assert!(proposals(answer, "fix run", &ws).is_empty());
}

#[test]
fn a_rust_function_is_replaced_inside_a_crate_and_the_tests_module_stays() {
    let lib = "/// Whether `year` is a leap year.\npub fn is_leap(year: u32) -> bool {\n    year % 4 == 0 && year % 100 != 0\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn t() {\n        assert!(is_leap(2000));\n    }\n}\n";
    let mut ws = Mem::new(&[("src/lib.rs", lib), ("Cargo.toml", "[package]\n")]);
    let answer = "The fix:\n```rust\npub fn is_leap(year: u32) -> bool {\n    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0\n}\n```";
    let props = proposals(answer, "cargo test fails. Fix src/lib.rs", &ws);
    ws.apply(&props);
    let text = &ws.0["src/lib.rs"];
    assert!(
        text.contains("|| year % 400 == 0\n}\n\n#[cfg(test)]"),
        "{text}"
    );
    assert!(
        text.starts_with("/// Whether"),
        "the doc comment stays: {text}"
    );
}

#[test]
fn a_shell_function_is_added_before_the_scripts_code() {
    let old = "#!/bin/sh\ngreet() {\n  echo hi\n}\ngreet\n";
    let mut ws = Mem::new(&[("run.sh", old)]);
    let answer = "In `run.sh`:\n```sh\nbye() {\n  echo bye\n}\n```";
    let props = proposals(answer, "add bye to run.sh", &ws);
    ws.apply(&props);
    assert_eq!(
        ws.0["run.sh"],
        "#!/bin/sh\ngreet() {\n  echo hi\n}\n\nbye() {\n  echo bye\n}\n\ngreet\n"
    );
}

#[test]
fn the_replacement_is_widened_until_it_is_unique() {
    let (old, new) = replacement("x\ny\nx\nz\n", "x\ny\nx\nw\n").unwrap();
    assert_eq!(("z\n", "w\n"), (old.as_str(), new.as_str()));
    let (old, new) = replacement("a\nb\na\nb\n", "a\nb\na\nc\nb\n").unwrap();
    assert_eq!(
        "a\nb\na\nb\n".matches(&old).count(),
        1,
        "unique: {old:?} -> {new:?}"
    );
    assert_eq!("a\nb\na\nb\n".replacen(&old, &new, 1), "a\nb\na\nc\nb\n");
    assert!(replacement("same\n", "same\n").is_none());
}

#[test]
fn long_shell_blocks_and_scripts_are_not_commands() {
    assert!(is_command(&["python3 count_words.py"]));
    assert!(is_command(&["$ cargo test", "# then", "ls"]));
    assert!(!is_command(&["for f in *; do", "  echo $f", "done"]));
    assert!(!is_command(&["a", "b", "c", "d"]));
    assert!(!is_command(&["cat > x <<EOF"]));
}

#[test]
fn the_files_a_message_names_are_found_once_each_and_missing_ones_not() {
    let ws = Mem::new(&[
        ("stats.py", STATS),
        ("sum.sh", "echo 1\n"),
        ("big.py", &"x = 1\n".repeat(10_000)),
    ]);
    let msg = "Running `python3 stats.py` crashes in stats.py; sum.sh, new.py and big.py too.";
    assert_eq!(named_files(msg, &ws), ["stats.py", "sum.sh"]);
    // A document the task asks to change is read too; a file of another kind is not.
    let ws = Mem::new(&[("README.md", "# x\n"), ("data.csv", "a,b\n"), ("g.py", "")]);
    let msg = "Add a flag to g.py, read data.csv and document it in README.md.";
    assert_eq!(named_files(msg, &ws), ["g.py", "README.md"]);
}

#[test]
fn a_whole_new_version_of_a_file_replaces_it_so_a_rename_leaves_no_old_definition() {
    let users = "USERS = {1: \"ada\", 2: \"grace\"}\n\n\ndef get_usr(uid):\n    return USERS.get(uid, \"unknown\")\n";
    let mut ws = Mem::new(&[("users.py", users)]);
    let answer = "Here is the updated code from `users.py`:\n\n```python\nUSERS = {1: \"ada\", 2: \"grace\"}\n\ndef get_user(uid):\n    return USERS.get(uid, \"unknown\")\n```";
    ws.apply(&proposals(answer, "Rename get_usr to get_user", &ws));
    let text = &ws.0["users.py"];
    assert!(
        text.contains("def get_user(uid)") && !text.contains("get_usr"),
        "{text}"
    );
    // With a placeholder for the rest it is not the whole file: merged by definition.
    let mut ws = Mem::new(&[("users.py", users)]);
    let elided = answer.replace("\n\ndef get_user", "\n# ... rest unchanged\n\ndef get_user");
    ws.apply(&proposals(&elided, "Rename get_usr to get_user", &ws));
    let text = &ws.0["users.py"];
    assert!(
        text.contains("def get_usr(uid)") && text.contains("def get_user(uid)"),
        "{text}"
    );
}

#[test]
fn a_method_shown_without_its_class_replaces_that_method() {
    let tests = "import unittest\n\n\nclass CalcTest(unittest.TestCase):\n    def test_total(self):\n        self.assertEqual(1, 1)\n\n    def test_average(self):\n        self.assertEqual(2, 3)\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n";
    let mut ws = Mem::new(&[("test_calc.py", tests)]);
    let answer = "I changed `test_calc.py`:\n```python\ndef test_average(self):\n    self.assertEqual(2, 2)\n```";
    ws.apply(&proposals(answer, "Fix the tests", &ws));
    let want = tests.replace("self.assertEqual(2, 3)", "self.assertEqual(2, 2)");
    assert_eq!(ws.0["test_calc.py"], want);
    // A plain function of that name is a new function, not the method.
    let mut ws = Mem::new(&[("test_calc.py", tests)]);
    let plain = "In `test_calc.py`:\n```python\ndef test_average(x):\n    return x\n```";
    ws.apply(&proposals(plain, "Fix the tests", &ws));
    assert!(ws.0["test_calc.py"].contains("self.assertEqual(2, 3)"));
    assert!(ws.0["test_calc.py"].contains("\ndef test_average(x):"));
}

#[test]
fn a_body_shown_as_a_comment_never_replaces_the_real_one() {
    // What the 1.5B model answered to "rename get_usr to get_user everywhere" (eval run E).
    let report = "from users import get_usr\n\n\ndef report(ids):\n    return \", \".join(get_usr(i) for i in ids)\n";
    let users = "USERS = {1: \"ada\", 2: \"grace\"}\n\n\ndef get_usr(uid):\n    return USERS.get(uid, \"unknown\")\n";
    let mut ws = Mem::new(&[("report.py", report), ("users.py", users)]);
    let answer = "The final code changes are as follows:\n\n```python\n# report.py\ndef report(ids):\n    \
                  # existing code\n```\n\n```python\n# users.py\nUSERS = {1: \"ada\", 2: \"grace\"}\n\n\
                  def get_user(uid):\n    return USERS.get(uid, \"unknown\")\n```\n";
    let props = proposals(
        answer,
        "Rename the function `get_usr` to `get_user` everywhere in this project.",
        &ws,
    );
    ws.apply(&props);
    assert_eq!(ws.0["report.py"], report, "{props:?}");
    assert!(ws.0["users.py"].contains("def get_user(uid):"), "{props:?}");
    // Rust and JS: `// ...` stands for the body too.
    let rs = "fn total(v: &[u32]) -> u32 {\n    v.iter().sum()\n}\n";
    let merged = units::merge(
        Lang::Rust,
        rs,
        "fn total(v: &[u32]) -> u32 {\n    // ... unchanged\n}\n",
    );
    assert_eq!(merged.as_deref(), Some(rs));
}

#[test]
fn a_line_shown_with_the_new_name_for_a_named_file_becomes_its_edit() {
    // What the 1.5B model answered after `python3 app.py` failed on report.py's import
    // (eval rows F3, R3, Y2 and others), and then stopped.
    let report = "from users import get_usr\n\n\ndef report(ids):\n    return \", \".join(get_usr(i) for i in ids)\n";
    let app = "from users import get_usr\n\nprint(get_usr(1))\n";
    let mut ws = Mem::new(&[
        ("report.py", report),
        ("users.py", "def get_user(uid):\n    return uid\n"),
        ("app.py", app),
    ]);
    let answer = "To fix the import error, I changed the import statement in `report.py` to \
                  import `get_user` from `users.py` instead of `get_usr`.\n\n```python\n# \
                  report.py\nfrom users import get_user\n```\n\nAfter making this change, the \
                  program `python3 app.py` runs without any errors.";
    let task = "Rename the function `get_usr` to `get_user` everywhere in this project (its \
                definition and every call). The program `python3 app.py` must still work.";
    let props = proposals(answer, task, &ws);
    assert_eq!(props.len(), 1, "{props:?}");
    ws.apply(&props);
    assert_eq!(
        ws.0["report.py"],
        report.replacen("import get_usr", "import get_user", 1)
    );
    // The same line for a file only the message names (app.py) is only an illustration.
    let unnamed = "For example:\n```python\nfrom users import get_user\n```";
    assert!(proposals(unnamed, task, &ws).is_empty());
    assert_eq!(ws.0["app.py"], app);
}
