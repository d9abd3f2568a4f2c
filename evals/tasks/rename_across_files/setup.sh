cat > users.py <<'PY'
USERS = {1: "ada", 2: "grace"}


def get_usr(uid):
    return USERS.get(uid, "unknown")
PY
cat > report.py <<'PY'
from users import get_usr


def report(ids):
    return ", ".join(get_usr(i) for i in ids)
PY
cat > app.py <<'PY'
from report import report
from users import get_usr

if __name__ == "__main__":
    print(get_usr(1))
    print(report([1, 2, 3]))
PY
