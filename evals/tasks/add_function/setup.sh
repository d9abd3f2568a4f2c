cat > mathops.py <<'PY'
def add(a, b):
    return a + b


def sub(a, b):
    return a - b
PY
cat > test_mathops.py <<'PY'
import unittest

from mathops import add, sub


class MathopsTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_sub(self):
        self.assertEqual(sub(5, 3), 2)


if __name__ == "__main__":
    unittest.main()
PY
