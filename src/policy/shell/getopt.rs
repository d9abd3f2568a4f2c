//! Options as GNU `getopt_long` reads them: short clusters (`-uo FILE`), attached values
//! (`-oFILE`, `--output=FILE`), separate values (`--output FILE`), unambiguous abbreviations
//! (`--out`), `--` and, for wrappers, the stop at the first operand.

use super::words::Word;

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
                if w.may_be_option() {
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
                    return i + 1;
                }
                Arity::Required if rest_empty && known => {
                    p.opts.push((c.to_string(), words.get(i + 1).cloned()));
                    return i + 2;
                }
                Arity::Required => {
                    p.opts.push((c.to_string(), Some(words[i].tail(k + 2))));
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
}
