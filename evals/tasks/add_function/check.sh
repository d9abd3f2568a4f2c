python3 -c 'from mathops import mul, add; assert mul(2, 3) == 6 and mul(-1, 4) == -4 and mul(0, 9) == 0 and add(2, 3) == 5' &&
grep -q 'mul(' test_mathops.py && python3 -m unittest -q test_mathops 2>/dev/null
