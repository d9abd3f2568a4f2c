python3 - <<'PY'
s = open("greet.py").read()
s = s.replace('    return text', '    return text.upper() if upper else text')
s = s.replace('    parser.add_argument("name")', '    parser.add_argument("name")\n    parser.add_argument("--upper", action="store_true")')
s = s.replace('print(greeting(args.name))', 'print(greeting(args.name, args.upper))')
open("greet.py", "w").write(s)
t = open("test_greet.py").read().replace('    def test_plain(self):', '    def test_upper(self):\n        self.assertEqual(greeting("ada", upper=True), "HELLO, ADA!")\n\n    def test_plain(self):')
open("test_greet.py", "w").write(t)
open("README.md", "a").write("\n`--upper` prints the greeting in upper case.\n")
PY
