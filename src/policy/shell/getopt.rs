//! Options as GNU `getopt_long` reads them: short clusters (`-uo FILE`), attached values
//! (`-oFILE`, `--output=FILE`), separate values (`--output FILE`), unambiguous abbreviations
//! (`--out`), `--` and, for wrappers, the stop at the first operand. [`NextWordSpec`] reads
//! the other common style, tree's: every value letter of a cluster takes the next word.
//!
//! A value or operand that the shell may split into several words (`-k $x`, `a$x`, `"$@"`)
//! shifts everything after it, so it counts as a word that may become an option.

use super::words::{DynKind, Tok, Word};

/// Whether a long option takes a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arity {
    /// `--flag`.
    No,
    /// `--opt VALUE` or `--opt=VALUE`.
    Required,
    /// Only `--opt=VALUE`.
    Optional,
}

/// An option table.
pub(crate) struct Spec {
    /// Short options as in getopt(3): `o:` takes a value, `o::` an attached optional one; a
    /// leading `+` stops at the first operand (wrappers: the rest is their command).
    pub short: &'static str,
    /// Long options (without `--`).
    pub long: &'static [(&'static str, Arity)],
    /// Whether unique prefixes of long options are accepted (GNU getopt, git).
    pub abbrev: bool,
}

/// What the words say, read with a [`Spec`].
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    /// Options found: a short letter (`"o"`) or a long name (`"output"`), with the index of
    /// the word holding the value, if separate. An ambiguous abbreviation names every option
    /// it could be.
    pub opts: Vec<(String, Option<Word>)>,
    /// Indices of operands.
    pub operands: Vec<usize>,
    /// With a `+` spec, the index of the first operand (the wrapped command), or the length.
    pub rest: usize,
    /// Options the table does not know.
    pub unknown: Vec<String>,
    /// Words in option position only known at run time (they may be any option).
    pub dynamic: Vec<usize>,
}

impl Parsed {
    /// Whether any of `names` was given.
    pub(crate) fn has(&self, names: &[&str]) -> bool {
        self.opts.iter().any(|(n, _)| names.contains(&n.as_str()))
    }

    /// The values given to any of `names`.
    pub(crate) fn values<'a>(&'a self, names: &'a [&str]) -> impl Iterator<Item = &'a Word> {
        self.opts
            .iter()
            .filter(|(n, _)| names.contains(&n.as_str()))
            .filter_map(|(_, v)| v.as_ref())
    }

    /// Why the parse is not certain, if it is not: an unknown option or a word that may be one.
    pub(crate) fn uncertain(&self, words: &[Word]) -> Option<String> {
        if let Some(u) = self.unknown.first() {
            return Some(format!("unknown option `{u}`"));
        }
        self.dynamic
            .first()
            .map(|&i| format!("`{}` may become an option when it runs", words[i].text()))
    }
}

impl Spec {
    /// Reads `words[from..]`.
    pub(crate) fn parse(&self, words: &[Word], from: usize) -> Parsed {
        let stop_at_operand = self.short.starts_with('+');
        let mut p = Parsed {
            rest: words.len(),
            ..Parsed::default()
        };
        let mut i = from;
        while i < words.len() {
            let w = &words[i];
            let prefix = w.literal_prefix();
            let whole = w.literal();
            if whole.as_deref() == Some("--") {
                p.operands.extend(i + 1..words.len());
                if stop_at_operand {
                    p.rest = i + 1;
                }
                break;
            }
            let is_option = prefix.starts_with('-') && whole.as_deref() != Some("-");
            if !is_option {
                if w.may_be_option() || may_split_off_option(w) {
                    p.dynamic.push(i);
                }
                if stop_at_operand {
                    p.rest = i;
                    break;
                }
                p.operands.push(i);
                i += 1;
                continue;
            }
            i = if let Some(long) = prefix.strip_prefix("--") {
                self.long_option(words, i, long, whole.is_some(), &mut p)
            } else {
                self.short_cluster(words, i, &prefix[1..], whole.is_some(), &mut p)
            };
        }
        p
    }

    /// `--name`, `--name=value`, `--name value`; `name` is the literal start of the word.
    fn long_option(
        &self,
        words: &[Word],
        i: usize,
        name: &str,
        known: bool,
        p: &mut Parsed,
    ) -> usize {
        let (name, attached) = match name.split_once('=') {
            Some((n, _)) => (n, true),
            None => (name, false),
        };
        // Only a literal prefix of the name is known: it may be any option it starts.
        let name_known = known || attached;
        let candidates: Vec<&(&str, Arity)> = match self.long.iter().find(|(l, _)| *l == name) {
            Some(exact) if name_known => vec![exact],
            _ => self
                .long
                .iter()
                .filter(|(l, _)| {
                    (self.abbrev || !name_known) && l.starts_with(name) && !name.is_empty()
                })
                .collect(),
        };
        if !name_known {
            p.dynamic.push(i);
        }
        if candidates.is_empty() {
            if name_known {
                p.unknown.push(format!("--{name}"));
            }
            return i + 1;
        }
        let value = |w: Word| Some(w);
        let eq = words[i]
            .literal_prefix()
            .find('=')
            .map_or(0, |b| words[i].literal_prefix()[..=b].chars().count());
        let attached_value = attached.then(|| words[i].tail(eq));
        if attached && may_split_off_option(&words[i]) {
            p.dynamic.push(i);
        }
        for (long, _) in &candidates {
            p.opts.push((long.to_string(), attached_value.clone()));
        }
        // An ambiguous abbreviation is an error for getopt; reading the next word as an option
        // again is the cautious way to continue.
        if let [(_, Arity::Required)] = candidates.as_slice()
            && !attached
            && name_known
        {
            if let (Some(next), Some(last)) = (words.get(i + 1), p.opts.last_mut()) {
                last.1 = value(next.clone());
            }
            note_value(words, i + 1, p);
            return i + 2;
        }
        i + 1
    }

    /// `-abc`, `-oVALUE`, `-o VALUE`; `cluster` is the literal text after the `-`.
    fn short_cluster(
        &self,
        words: &[Word],
        i: usize,
        cluster: &str,
        known: bool,
        p: &mut Parsed,
    ) -> usize {
        let chars: Vec<char> = cluster.chars().collect();
        for (k, &c) in chars.iter().enumerate() {
            let Some(pos) = self.short.find(c).filter(|_| c != ':' && c != '+') else {
                p.unknown.push(format!("-{c}"));
                continue;
            };
            let arity = &self.short[pos + c.len_utf8()..];
            let takes = if arity.starts_with("::") {
                Arity::Optional
            } else if arity.starts_with(':') {
                Arity::Required
            } else {
                Arity::No
            };
            let rest_empty = k + 1 == chars.len();
            match takes {
                Arity::No => p.opts.push((c.to_string(), None)),
                Arity::Optional => {
                    let v = (!rest_empty || !known).then(|| words[i].tail(k + 2));
                    p.opts.push((c.to_string(), v));
                    if may_split_off_option(&words[i]) {
                        p.dynamic.push(i);
                    }
                    return i + 1;
                }
                Arity::Required if rest_empty && known => {
                    p.opts.push((c.to_string(), words.get(i + 1).cloned()));
                    note_value(words, i + 1, p);
                    return i + 2;
                }
                Arity::Required => {
                    p.opts.push((c.to_string(), Some(words[i].tail(k + 2))));
                    if may_split_off_option(&words[i]) {
                        p.dynamic.push(i);
                    }
                    return i + 1;
                }
            }
        }
        // The cluster continues with something only known at run time: any option.
        if !known {
            p.dynamic.push(i);
        }
        i + 1
    }
}

/// Notes the separate value `words[i]` (if there is one) as uncertain when it may expand to
/// several words: the ones after the first are read as options and operands.
fn note_value(words: &[Word], i: usize, p: &mut Parsed) {
    if let Some(v) = words.get(i)
        && (may_split_off_option(v) || (v.has_glob() && v.may_be_option()))
    {
        p.dynamic.push(i);
    }
}

/// Whether expanding `w` may make more words than its first, one of them starting with `-`:
/// an unquoted expansion is split on spaces (`a$x` with `x="b -o out"`), `"$@"` and
/// `"${a[@]}"` are several words however quoted. (A glob's matches all start like the glob,
/// so only one that may start with `-` matters: [`Word::may_be_option`].)
fn may_split_off_option(w: &Word) -> bool {
    w.toks.iter().any(|t| match t {
        Tok::Dyn { src, quoted, kind } => {
            *kind != DynKind::ProcSub && (src.contains('@') || (!*quoted && !never_split(src)))
        }
        Tok::Char { .. } => false,
    })
}

/// Parameters the shell sets to a number, which never splits.
fn never_split(src: &str) -> bool {
    matches!(super::words::var_name(src), Some("?" | "$" | "#" | "!"))
}

/// An option table in tree's style (tree 1.x and 2.x parse their own arguments): each value
/// letter of a cluster takes the next unused word, not the rest of the cluster (`-Lo 2 f`
/// is `-L 2 -o f`); long options are exact names, or a value name as a prefix of the word
/// with `=VALUE` or the next word; only `--` ends the options.
pub(crate) struct NextWordSpec {
    /// Letters without a value.
    pub flags: &'static str,
    /// Letters that take the next unused word.
    pub values: &'static str,
    /// Value letters that take the digits right after them in the cluster when there are
    /// some (tree 2.1.3's `-L2`), else the next word.
    pub digits: &'static str,
    /// Long options without a value, exact.
    pub long_flags: &'static [&'static str],
    /// Long options with a value, matched as a prefix of the word as tree does.
    pub long_values: &'static [&'static str],
}

impl NextWordSpec {
    /// Reads `words[from..]`: options as letters and long names (without `--`), values with
    /// the word they came from; unknown options, and words that may become options.
    pub(crate) fn parse(&self, words: &[Word], from: usize) -> Parsed {
        let mut p = Parsed {
            rest: words.len(),
            ..Parsed::default()
        };
        let mut options = true;
        let mut i = from;
        while i < words.len() {
            let w = &words[i];
            let prefix = w.literal_prefix();
            let known = w.literal().is_some();
            // The next word a value letter takes.
            let mut next = i + 1;
            if !options || !prefix.starts_with('-') || w.literal().as_deref() == Some("-") {
                if options && (w.may_be_option() || may_split_off_option(w)) {
                    p.dynamic.push(i);
                }
                p.operands.push(i);
                i += 1;
                continue;
            }
            if !known || may_split_off_option(w) {
                // `-L$x`, `--$x`, `-a*`: any cluster, taking any number of words.
                p.dynamic.push(i);
            }
            if prefix == "--" && known {
                options = false;
            } else if let Some(long) = prefix.strip_prefix("--") {
                self.long_option(words, i, long, &mut next, &mut p);
            } else {
                self.cluster(words, &prefix[1..], &mut next, &mut p);
            }
            i = next;
        }
        p
    }

    /// `--name`, `--value-name=V`, `--value-nameANY V`.
    fn long_option(&self, words: &[Word], i: usize, long: &str, next: &mut usize, p: &mut Parsed) {
        if self.long_flags.contains(&long) {
            p.opts.push((long.to_string(), None));
            return;
        }
        let Some(name) = self.long_values.iter().find(|n| long.starts_with(**n)) else {
            p.unknown.push(format!("--{long}"));
            return;
        };
        if long[name.len()..].starts_with('=') {
            p.opts
                .push((name.to_string(), Some(words[i].tail(name.len() + 3))));
        } else {
            p.opts.push((name.to_string(), words.get(*next).cloned()));
            note_value(words, *next, p);
            *next += 1;
        }
    }

    /// The letters of `-cluster`, each value letter taking the word at `next`.
    fn cluster(&self, words: &[Word], cluster: &str, next: &mut usize, p: &mut Parsed) {
        let chars: Vec<char> = cluster.chars().collect();
        let mut k = 0;
        while let Some(&c) = chars.get(k) {
            k += 1;
            if self.digits.contains(c) && chars.get(k).is_some_and(char::is_ascii_digit) {
                let digits: String = chars[k..]
                    .iter()
                    .take_while(|d| d.is_ascii_digit())
                    .collect();
                k += digits.chars().count();
                p.opts.push((c.to_string(), Some(Word::lit(&digits))));
            } else if self.values.contains(c) {
                p.opts.push((c.to_string(), words.get(*next).cloned()));
                note_value(words, *next, p);
                *next += 1;
            } else if self.flags.contains(c) {
                p.opts.push((c.to_string(), None));
            } else {
                // tree stops with an error here; a newer tree may know the letter.
                p.unknown.push(format!("-{c}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SORT: Spec = Spec {
        short: "bcCdfghik:mMno:rRsS:t:T:uVz",
        long: &[
            ("output", Arity::Required),
            ("compress-program", Arity::Required),
            ("check", Arity::Optional),
            ("key", Arity::Required),
            ("unique", Arity::No),
        ],
        abbrev: true,
    };

    const WRAPPER: Spec = Spec {
        short: "+k:s:v",
        long: &[("signal", Arity::Required), ("kill-after", Arity::Required)],
        abbrev: true,
    };

    fn words(line: &str) -> Vec<Word> {
        line.split(' ').map(Word::lit).collect()
    }

    fn names(p: &Parsed) -> Vec<&str> {
        p.opts.iter().map(|(n, _)| n.as_str()).collect()
    }

    #[test]
    fn short_clusters_and_values() {
        let w = words("sort -uo out.txt in.txt");
        let p = SORT.parse(&w, 1);
        assert_eq!(names(&p), ["u", "o"]);
        assert_eq!(
            p.values(&["o"]).next().map(Word::text).as_deref(),
            Some("out.txt")
        );
        assert_eq!(p.operands, [3]);
        let p = SORT.parse(&words("sort -tone data"), 1);
        assert_eq!(names(&p), ["t"], "-t takes the rest of the cluster");
        assert_eq!(p.operands, [2]);
    }

    #[test]
    fn long_options_abbreviate_and_take_values() {
        let p = SORT.parse(&words("sort --c=sh x"), 1);
        assert_eq!(names(&p), ["compress-program", "check"], "ambiguous: both");
        let p = SORT.parse(&words("sort -o/tmp/x y"), 1);
        assert_eq!(
            p.values(&["o"]).next().map(Word::text).as_deref(),
            Some("/tmp/x")
        );
        let p = SORT.parse(&words("sort --comp sh x"), 1);
        assert_eq!(names(&p), ["compress-program"]);
        assert_eq!(p.operands, [3]);
        let p = SORT.parse(&words("sort --ke 2 --bogus x"), 1);
        assert_eq!(p.unknown, ["--bogus"]);
        assert_eq!(p.operands, [4]);
        let p = SORT.parse(&words("sort -- --output=x"), 1);
        assert!(p.opts.is_empty());
        assert_eq!(p.operands, [2]);
    }

    #[test]
    fn wrappers_stop_at_their_command() {
        let p = WRAPPER.parse(&words("timeout --sig KILL 5 rm -rf x"), 1);
        assert_eq!(names(&p), ["signal"]);
        assert_eq!(p.rest, 3);
        let p = WRAPPER.parse(&words("timeout -vk 1 5 ls -l"), 1);
        assert_eq!(p.rest, 3, "the duration");
    }
    const TREE: NextWordSpec = NextWordSpec {
        flags: "adR",
        values: "PIHTLo",
        digits: "L",
        long_flags: &["dirsfirst"],
        long_values: &["charset", "sort"],
    };

    fn value(p: &Parsed, name: &str) -> Option<String> {
        p.values(&[name]).next().map(Word::text)
    }

    #[test]
    fn tree_clusters_give_each_value_letter_the_next_word() {
        let p = TREE.parse(&words("tree -Lo 2 out.txt"), 1);
        assert_eq!(names(&p), ["L", "o"]);
        assert_eq!(value(&p, "o").as_deref(), Some("out.txt"));
        assert!(p.operands.is_empty());
        let p = TREE.parse(&words("tree -PoH x out.txt y z"), 1);
        assert_eq!(value(&p, "P").as_deref(), Some("x"));
        assert_eq!(value(&p, "o").as_deref(), Some("out.txt"));
        assert_eq!(value(&p, "H").as_deref(), Some("y"));
        assert_eq!(p.operands, [5]);
        // tree 2.1.3 takes digits right after -L from the cluster.
        let p = TREE.parse(&words("tree -L2o f d"), 1);
        assert_eq!(value(&p, "L").as_deref(), Some("2"));
        assert_eq!(value(&p, "o").as_deref(), Some("f"));
        assert_eq!(p.operands, [3]);
        // A value word is not read as an option, `--` ends them, long values are prefixes.
        let p = TREE.parse(&words("tree -I -o --charsetx -o -- -o"), 1);
        assert_eq!(names(&p), ["I", "charset"]);
        assert_eq!(p.operands, [6]);
        let p = TREE.parse(&words("tree --charset=utf8 --sort name -e --du"), 1);
        assert_eq!(value(&p, "charset").as_deref(), Some("utf8"));
        assert_eq!(p.unknown, ["-e", "--du"]);
    }

    #[test]
    fn values_and_operands_the_shell_may_split_are_uncertain() {
        let var = |prefix: &str, src: &str, quoted: bool| {
            let mut w = Word::lit(prefix);
            w.toks.push(Tok::Dyn {
                src: src.into(),
                quoted,
                kind: DynKind::Var,
            });
            w
        };
        let line = |mid: Word| {
            let mut w = words("sort -k");
            w.push(mid);
            w.push(Word::lit("f"));
            w
        };
        let tree_line = |w: &[Word]| {
            let mut w = w.to_vec();
            w[0] = Word::lit("tree");
            w[1] = Word::lit("-L");
            w
        };
        for (w, uncertain) in [
            (line(var("", "$x", false)), true),
            (line(var("", "$x", true)), false),
            (line(var("", "$@", true)), true),
            (line(var("", "$#", false)), false),
            (line(var("1", "$x", false)), true),
        ] {
            let p = SORT.parse(&w, 1);
            assert_eq!(p.uncertain(&w).is_some(), uncertain, "{w:?}");
            let w = tree_line(&w);
            let p = TREE.parse(&w, 1);
            assert_eq!(!p.dynamic.is_empty(), uncertain, "tree: {w:?}");
        }
        // Attached values and operands split too: `-k$x`, `--key=$x`, `a$x`.
        for w in [
            vec![Word::lit("sort"), var("-k", "$x", false)],
            vec![Word::lit("sort"), var("--key=", "$x", false)],
            vec![Word::lit("sort"), var("a", "$x", false)],
        ] {
            assert!(SORT.parse(&w, 1).uncertain(&w).is_some(), "{w:?}");
        }
        let w = vec![Word::lit("sort"), var("-k", "$x", true)];
        assert!(SORT.parse(&w, 1).uncertain(&w).is_none());
    }
}
