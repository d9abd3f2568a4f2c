mkdir -p tests && cat > tests/eval_leap.rs <<'RS'
#[test]
fn eval_leap_years() {
    for (y, want) in [(1600, true), (1700, false), (1996, true), (2000, true), (2100, false), (2023, false)] {
        assert_eq!(leap::is_leap(y), want, "{y}");
    }
}
RS
cargo test -q --offline >/dev/null 2>&1
