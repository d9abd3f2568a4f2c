cat > calc.py <<'PY'
def total(xs):
    return sum(xs)


def average(xs):
    """The mean of a non-empty list of numbers."""
    return total(xs) / (len(xs) - 1)
PY
cat > test_calc.py <<'PY'
import unittest

from calc import average, total


class CalcTest(unittest.TestCase):
    def test_total(self):
        self.assertEqual(total([1, 2, 3]), 6)

    def test_average(self):
        self.assertEqual(average([2, 4, 6]), 4)
        self.assertEqual(average([5]), 5)


if __name__ == "__main__":
    unittest.main()
PY
