mkdir -p pkg/io pkg/net pkg/util
touch pkg/__init__.py pkg/io/__init__.py pkg/net/__init__.py pkg/util/__init__.py
cat > pkg/io/files.py <<'PY'
def read_lines(path):
    with open(path) as f:
        return f.read().splitlines()
PY
cat > pkg/net/wire.py <<'PY'
def parse_header(line):
    name, _, value = line.partition(":")
    return name.strip().lower(), value.strip()
PY
cat > pkg/net/client.py <<'PY'
from pkg.net.wire import parse_header


def headers(lines):
    return dict(parse_header(l) for l in lines)
PY
cat > pkg/util/text.py <<'PY'
def slug(s):
    return "-".join(s.lower().split())
PY
