printf '\n\ndef mul(a, b):\n    return a * b\n' >> mathops.py
sed -i 's/from mathops import add, sub/from mathops import add, mul, sub/' test_mathops.py
sed -i 's/    def test_sub(self):/    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n\n    def test_sub(self):/' test_mathops.py
