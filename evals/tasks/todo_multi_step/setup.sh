cat > greet.py <<'PY'
import argparse


def greeting(name, upper=False):
    text = f"Hello, {name}!"
    return text


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("name")
    args = parser.parse_args(argv)
    print(greeting(args.name))


if __name__ == "__main__":
    main()
PY
cat > test_greet.py <<'PY'
import unittest

from greet import greeting


class GreetTest(unittest.TestCase):
    def test_plain(self):
        self.assertEqual(greeting("ada"), "Hello, ada!")


if __name__ == "__main__":
    unittest.main()
PY
cat > README.md <<'MD'
# greet

Usage: `python3 greet.py NAME`
MD
