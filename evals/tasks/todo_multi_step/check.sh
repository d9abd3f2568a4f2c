[ "$(python3 greet.py --upper ada)" = "HELLO, ADA!" ] && [ "$(python3 greet.py ada)" = "Hello, ada!" ] &&
grep -qi 'upper' test_greet.py && python3 -m unittest -q test_greet 2>/dev/null && grep -q -- '--upper' README.md
