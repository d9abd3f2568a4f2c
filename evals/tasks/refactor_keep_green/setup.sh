cat > shapes.py <<'PY'
def area_rect(width, height):
    if width < 0 or height < 0:
        raise ValueError("negative size")
    return width * height


def area_square(side):
    if side < 0:
        raise ValueError("negative size")
    return side * side
PY
cat > test_shapes.py <<'PY'
import unittest

from shapes import area_rect, area_square


class ShapesTest(unittest.TestCase):
    def test_rect(self):
        self.assertEqual(area_rect(2, 3), 6)

    def test_square(self):
        self.assertEqual(area_square(4), 16)

    def test_negative(self):
        with self.assertRaises(ValueError):
            area_square(-1)


if __name__ == "__main__":
    unittest.main()
PY
