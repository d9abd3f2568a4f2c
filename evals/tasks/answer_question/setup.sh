mkdir -p server
cat > server/settings.py <<'PY'
import os

BASE_PORT = 8000
OFFSET = int(os.environ.get("PORT_OFFSET", "80"))


def port():
    return BASE_PORT + OFFSET
PY
cat > server/main.py <<'PY'
from server.settings import port


def serve():
    print(f"listening on {port()}")


if __name__ == "__main__":
    serve()
PY
touch server/__init__.py
