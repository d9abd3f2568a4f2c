//! An option the task asks for that the parser reads and nothing uses: the 1.5B model gave
//! greet.py's `greeting` an `upper` parameter and its parser `--upper`, and `main` still
//! called `greeting(args.name)`. The nudge names the call to change and how.

use super::asked_names::{quoted_options, source_target};
use crate::agent::code_blocks::{FileState, Lang, Workspace};

/// The nudge for an option the task quotes that the named Python source parses
/// (`add_argument("--upper"…)`) into `args.upper` and never uses; with the line to change
/// where a function of the file takes a parameter of that name and a call of it passes other
/// `args.` values but not this one. `None` when each quoted option is used or not parsed.
pub fn option_not_used(task: &str, named: &[String], ws: &dyn Workspace) -> Option<String> {
    let options = quoted_options(task);
    if options.is_empty() {
        return None;
    }
    let target = source_target(named)?;
    if Lang::of_path(target) != Some(Lang::Python) {
        return None;
    }
    let FileState::Text(text) = ws.file(target) else {
        return None;
    };
    let args = parsed_into(&text)?;
    let (option, dest) = options.iter().find_map(|o| {
        let dest = o[2..].replace('-', "_");
        let parsed = text
            .lines()
            .any(|l| l.contains(".add_argument(") && l.contains(&format!("\"{o}\"")));
        (parsed && !text.contains(&format!("{args}.{dest}"))).then_some((o, dest))
    })?;
    let value = format!("{args}.{dest}");
    let how = match call_to_extend(&text, &args, &dest) {
        Some((line, fixed)) => format!("change the line `{line}` to `{fixed}`"),
        None => format!("use `{value}` where the task says"),
    };
    Some(format!(
        "[rein] {target} reads `{option}` into `{value}` but never uses it: {how} with \
         str_replace, then run {target} with `{option}` to check it."
    ))
}

/// The name the file's parsed arguments go into: `args` of `args = parser.parse_args(argv)`.
fn parsed_into(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (left, right) = l.split_once('=')?;
        let name = left.trim();
        let plain = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_');
        (plain && right.contains(".parse_args(")).then(|| name.to_string())
    })
}

/// A line calling a function of the file that takes a parameter `dest`, passing other
/// `args.` values but not `dest`, and the line with `dest=args.dest` passed too.
fn call_to_extend(text: &str, args: &str, dest: &str) -> Option<(String, String)> {
    let functions: Vec<&str> = text
        .lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix("def ")?;
            let (name, params) = rest.split_once('(')?;
            let takes = params
                .split([',', ')', '=', ':'])
                .any(|p| p.trim().trim_start_matches('*') == dest);
            takes.then_some(name.trim())
        })
        .collect();
    text.lines().map(str::trim).find_map(|line| {
        if !line.contains(&format!("{args}.")) || line.starts_with("def ") {
            return None;
        }
        functions.iter().find_map(|f| {
            let open = line.find(&format!("{f}("))? + f.len();
            let close = matching_paren(line, open)?;
            let inner = line[open + 1..close].trim();
            let sep = if inner.is_empty() { "" } else { ", " };
            let fixed = format!(
                "{}{sep}{dest}={args}.{dest}{}",
                &line[..close],
                &line[close..]
            );
            Some((line.to_string(), fixed))
        })
    })
}

/// The index of the `)` that closes the `(` at `open`.
fn matching_paren(line: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in line.char_indices().skip_while(|(i, _)| *i < open) {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::code_blocks::tests::Mem;

    const GREET: &str = "import argparse\n\n\ndef greeting(name, upper=False):\n    text = f\"Hello, {name}!\"\n    return text.upper() if upper else text\n\n\ndef main(argv=None):\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"name\")\n    parser.add_argument(\"--upper\", action=\"store_true\")\n    args = parser.parse_args(argv)\n    print(greeting(args.name))\n";

    const TASK: &str = "Add a `--upper` option to greet.py that prints the greeting in upper case.";

    #[test]
    fn an_option_parsed_and_not_used_names_the_call_to_pass_it_to() {
        let ws = Mem::new(&[("greet.py", GREET)]);
        let named = ["greet.py".to_string()];
        let nudge = option_not_used(TASK, &named, &ws).expect("a nudge");
        assert!(
            nudge.contains("greet.py reads `--upper` into `args.upper` but never uses it"),
            "{nudge}"
        );
        assert!(
            nudge.contains("change the line `print(greeting(args.name))` to `print(greeting(args.name, upper=args.upper))`"),
            "{nudge}"
        );
        // Without a function taking `upper`: use it where the task says.
        let plain = GREET.replace("name, upper=False", "name");
        let ws = Mem::new(&[("greet.py", plain.as_str())]);
        let nudge = option_not_used(TASK, &named, &ws).expect("a nudge");
        assert!(
            nudge.contains("use `args.upper` where the task says"),
            "{nudge}"
        );
    }

    #[test]
    fn an_option_used_or_not_parsed_gets_no_nudge() {
        let named = ["greet.py".to_string()];
        let used = GREET.replace("greeting(args.name)", "greeting(args.name, args.upper)");
        let not_parsed = GREET.replace(
            "    parser.add_argument(\"--upper\", action=\"store_true\")\n",
            "",
        );
        for text in [used.as_str(), not_parsed.as_str()] {
            let ws = Mem::new(&[("greet.py", text)]);
            assert_eq!(option_not_used(TASK, &named, &ws), None, "{text}");
        }
        let ws = Mem::new(&[("greet.py", GREET)]);
        assert_eq!(option_not_used("Make it shout.", &named, &ws), None);
    }
}
