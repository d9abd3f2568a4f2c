#!/usr/bin/env python3
"""Runs rein's eval tasks against the configured model and prints a table.

    python3 evals/run.py [--rein BIN] [--only a,b] [--label NAME] [--out FILE.json] [--repeat N]
    python3 evals/run.py --show A.json [B.json ...]     # print saved runs side by side

Each task in evals/tasks/NAME has prompt.txt, setup.sh (builds the workspace) and check.sh
(exit 0 = solved; it sees the final answer in $EVAL_ANSWER and a scratch dir in $EVAL_TMP);
solution.sh is a reference solution for `--selftest`, which proves each checker can fail.
rein runs `exec --yes --json` in a fresh git workspace with its own data dir, so its session
file can be read afterwards: requests, tokens, tool errors, recovered text calls and reminder
echoes come from there. The model is whatever rein is configured with (flags are not passed:
set BASE_URL / MODEL or ~/.agents/env). Standard library only.

`--repeat N` runs every task N times (all tasks once, then again): even at temperature 0 two
runs differ (the reminder carries the clock), so one run's count moves by a task or two. The
table then gives each task's count of solved runs and the totals per round, by majority (a task
solved in more than half of its runs) and the mean.
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TASKS = os.path.join(HERE, "tasks")
COLUMNS = [
    ("task", "task", 22),
    ("solved", "solved", 6),
    ("requests", "req", 4),
    ("tokens_in", "tok_in", 8),
    ("tokens_out", "tok_out", 7),
    ("wall_s", "wall_s", 7),
    ("tool_errors", "tool_err", 8),
    ("recovered_calls", "recov", 5),
    ("applied_blocks", "blocks", 6),
    ("reminder_echoes", "echo", 4),
    ("first_request_tokens", "first_in", 8),
]
# Each eval workspace caps the requests of one run, so a looping model ends in bounded time.
PROJECT_CONFIG = "max_requests = 25\n"


def default_rein():
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(os.path.dirname(HERE), "target")
    for profile in ("release", "debug"):
        path = os.path.join(target, profile, "rein")
        if os.access(path, os.X_OK):
            return path
    return shutil.which("rein") or "rein"


def sh(script, cwd, env=None, timeout=600):
    return subprocess.run(
        ["bash", "-e", script], cwd=cwd, env=env, timeout=timeout,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def git_init(ws):
    env = dict(os.environ, GIT_AUTHOR_NAME="eval", GIT_AUTHOR_EMAIL="eval@localhost",
               GIT_COMMITTER_NAME="eval", GIT_COMMITTER_EMAIL="eval@localhost")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "setup"]):
        subprocess.run(["git", *args], cwd=ws, env=env, check=True, stdout=subprocess.DEVNULL)


def session_entries(data_home):
    """Every entry of the run's session file, subagent side chains unwrapped."""
    files = sorted(glob.glob(os.path.join(data_home, "rein", "sessions", "*.jsonl")))
    header, entries = {}, []
    for path in files:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if e.get("type") == "header":
                    header = e
                    continue
                while e.get("type") == "subagent" and isinstance(e.get("entry"), dict):
                    e = e["entry"]
                entries.append(e)
    return header, entries


def looks_like_echo(text):
    """An answer repeating rein's reminder, with or without its tags (for rein versions that
    do not record the echoes they drop)."""
    return "system-reminder>" in text or re.search(r"(?m)^\s*Current time: \d{4}-\d\d-\d\d", text) is not None


def metrics(entries):
    m = {"requests": 0, "tokens_in": 0, "tokens_out": 0, "tool_errors": 0,
         "recovered_calls": 0, "applied_blocks": 0, "reminder_echoes": 0, "first_request_tokens": None,
         "empty_answers": 0, "invented_results": 0, "tools": {}}
    for e in entries:
        kind = e.get("type")
        if kind == "assistant":
            m["requests"] += 1
            for p in e.get("parts", []):
                if p.get("type") == "text" and looks_like_echo(p.get("text", "")):
                    m["reminder_echoes"] += 1
                if p.get("type") == "tool_call":
                    name = p.get("name", "?")
                    m["tools"][name] = m["tools"].get(name, 0) + 1
        elif kind == "usage":
            m["tokens_in"] += e.get("input_tokens", 0)
            m["tokens_out"] += e.get("output_tokens", 0)
            if m["first_request_tokens"] is None:
                m["first_request_tokens"] = e.get("input_tokens", 0)
        elif kind == "tool_result" and e.get("is_error"):
            m["tool_errors"] += 1
        elif kind == "model_quirk":
            q = e.get("kind")
            if q == "recovered_tool_call":
                m["recovered_calls"] += 1
            elif q == "applied_code_block":
                m["applied_blocks"] += 1
            elif q == "reminder_echo":
                m["reminder_echoes"] += 1
            elif q == "empty_answer":
                m["empty_answers"] += 1
            elif q == "invented_tool_result":
                m["invented_results"] += 1
    return m


def final_answer(stdout):
    answer = ""
    for line in stdout.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if ev.get("type") == "assistant_message" and ev.get("text", "").strip():
            answer = ev["text"]
    return answer


def run_task(name, rein, timeout):
    with open(os.path.join(TASKS, name, "prompt.txt"), encoding="utf-8") as f:
        prompt = f.read().strip()
    tmp, ws = prepare(name)
    data, scratch = os.path.join(tmp, "data"), os.path.join(tmp, "scratch")
    os.makedirs(data)
    os.makedirs(scratch)
    env = dict(os.environ, XDG_DATA_HOME=data)
    started = time.monotonic()
    timed_out = False
    try:
        proc = subprocess.run([rein, "exec", "--yes", "--json", prompt], cwd=ws, env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=timeout)
        stdout, stderr, code = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        timed_out = True
        stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        stderr, code = "timed out", None
    wall = time.monotonic() - started
    answer = final_answer(stdout)
    answer_path = os.path.join(scratch, "answer.txt")
    with open(answer_path, "w", encoding="utf-8") as f:
        f.write(answer)
    solved, check_out = check(name, ws, answer_path, scratch)
    header, entries = session_entries(data)
    result = {"task": name, "solved": solved, "exit_code": code, "timed_out": timed_out,
              "wall_s": round(wall, 1), "answer": answer[-2000:],
              "stderr_tail": stderr[-1500:], "check_output": check_out[-1500:],
              "model": header.get("model"), "workdir": tmp}
    result.update(metrics(entries))
    return result


def prepare(name):
    """A fresh temp dir with the task's workspace set up and committed; returns (tmp, ws)."""
    task_dir = os.path.join(TASKS, name)
    tmp = tempfile.mkdtemp(prefix=f"rein-eval-{name}-")
    ws = os.path.join(tmp, "ws")
    os.makedirs(ws)
    sh(os.path.join(task_dir, "setup.sh"), ws).check_returncode()
    os.makedirs(os.path.join(ws, ".rein"))
    with open(os.path.join(ws, ".rein", "config.toml"), "w", encoding="utf-8") as f:
        f.write(PROJECT_CONFIG)
    git_init(ws)
    return tmp, ws


def check(name, ws, answer_path, scratch):
    env = dict(os.environ, EVAL_ANSWER=answer_path, EVAL_TMP=scratch)
    try:
        done = sh(os.path.join(TASKS, name, "check.sh"), ws, env=env, timeout=300)
        return done.returncode == 0, done.stdout
    except subprocess.TimeoutExpired:
        return False, "checker timed out"


def selftest(names):
    """Every checker must fail on the untouched workspace and pass after solution.sh."""
    bad = 0
    for name in names:
        verdicts = []
        for solve in (False, True):
            tmp, ws = prepare(name)
            scratch = os.path.join(tmp, "scratch")
            os.makedirs(scratch)
            answer = os.path.join(scratch, "answer.txt")
            open(answer, "w").close()
            if solve:
                env = dict(os.environ, EVAL_ANSWER=answer, EVAL_TMP=scratch)
                sh(os.path.join(TASKS, name, "solution.sh"), ws, env=env).check_returncode()
            verdicts.append(check(name, ws, answer, scratch)[0])
            shutil.rmtree(tmp, ignore_errors=True)
        ok = verdicts == [False, True]
        bad += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: unsolved={verdicts[0]} solved={verdicts[1]}")
    return 1 if bad else 0


def fmt(value, width):
    if isinstance(value, bool):
        return ("yes" if value else "no").ljust(width)
    if isinstance(value, (int, float)):
        return str(value).rjust(width)
    return ("-" if value is None else str(value)).ljust(width)


def print_table(run, out=sys.stdout):
    head = "  ".join(label.ljust(w) for _, label, w in COLUMNS)
    print(f"# {run.get('label', '')}  model={run.get('model')}  rein={run.get('rein')}", file=out)
    print(head, file=out)
    for t in run["tasks"]:
        print("  ".join(fmt(t.get(k), w) for k, _, w in COLUMNS), file=out)
    if run.get("rounds", 1) > 1:
        print_repeats(run, out)
    tot = run["totals"]
    print(f"solved {tot['solved']}/{tot['tasks']}  requests {tot['requests']}  tokens in/out "
          f"{tot['tokens_in']}/{tot['tokens_out']}  wall {tot['wall_s']} s  tool errors "
          f"{tot['tool_errors']}  recovered calls {tot['recovered_calls']}  applied blocks "
          f"{tot.get('applied_blocks', 0)}  reminder echoes "
          f"{tot['reminder_echoes']}  empty answers {tot['empty_answers']}  first request "
          f"{tot['first_request_tokens']} tokens", file=out)


def repeats(tasks):
    """Per task, in first-run order: (name, runs solved, runs)."""
    counts = {}
    for t in tasks:
        solved, runs = counts.get(t["task"], (0, 0))
        counts[t["task"]] = (solved + bool(t["solved"]), runs + 1)
    return [(name, solved, runs) for name, (solved, runs) in counts.items()]


def repeat_totals(tasks, rounds):
    """Solved per round, by majority (more than half of a task's runs) and the mean."""
    per_round = [sum(1 for t in tasks if t.get("round", 1) == r and t["solved"])
                 for r in range(1, rounds + 1)]
    majority = sum(1 for _, solved, runs in repeats(tasks) if 2 * solved > runs)
    return {"per_round": per_round, "majority": majority,
            "mean": round(sum(per_round) / rounds, 2), "tasks": len(repeats(tasks))}


def print_repeats(run, out):
    print(f"solved runs per task ({run['rounds']} rounds):", file=out)
    for name, solved, runs in repeats(run["tasks"]):
        print(f"  {name.ljust(22)} {solved}/{runs}", file=out)
    rep = run["repeat_totals"]
    print(f"solved per round {', '.join(map(str, rep['per_round']))}; by majority "
          f"{rep['majority']}/{rep['tasks']}; mean {rep['mean']}", file=out)


def totals(tasks):
    keys = ["requests", "tokens_in", "tokens_out", "tool_errors", "recovered_calls",
            "applied_blocks", "reminder_echoes", "empty_answers"]
    t = {k: sum(x.get(k) or 0 for x in tasks) for k in keys}
    t["tasks"] = len(tasks)
    t["solved"] = sum(1 for x in tasks if x["solved"])
    t["wall_s"] = round(sum(x["wall_s"] for x in tasks), 1)
    firsts = sorted(x["first_request_tokens"] for x in tasks if x.get("first_request_tokens"))
    t["first_request_tokens"] = firsts[len(firsts) // 2] if firsts else None
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rein", default=default_rein(), help="the rein binary (default: target/{release,debug}/rein)")
    ap.add_argument("--only", help="comma-separated task names")
    ap.add_argument("--label", default="", help="a name for this run, kept in the JSON")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per task (default 600)")
    ap.add_argument("--out", help="JSON file to write (default evals/results/<time>-<label>.json)")
    ap.add_argument("--show", nargs="+", metavar="JSON", help="print saved runs instead of running")
    ap.add_argument("--selftest", action="store_true", help="check the checkers (no model needed)")
    ap.add_argument("--rescore", metavar="JSON", help="recount a saved run from its session files")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="run every task N times and report solved runs per task (default 1)")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat needs a count of at least 1")
    if args.rescore:
        with open(args.rescore, encoding="utf-8") as f:
            run = json.load(f)
        for t in run["tasks"]:
            t.update(metrics(session_entries(os.path.join(t["workdir"], "data"))[1]))
        run["totals"] = totals(run["tasks"])
        if run.get("rounds", 1) > 1:
            run["repeat_totals"] = repeat_totals(run["tasks"], run["rounds"])
        with open(args.rescore, "w", encoding="utf-8") as f:
            json.dump(run, f, indent=1)
        print_table(run)
        return 0
    if args.show:
        for path in args.show:
            with open(path, encoding="utf-8") as f:
                print_table(json.load(f))
            print()
        return 0
    names = sorted(os.listdir(TASKS)) if not args.only else args.only.split(",")
    if args.selftest:
        return selftest(names)
    # Tasks run in their own workspaces: a relative path to the binary must not depend on that.
    if os.path.exists(args.rein):
        args.rein = os.path.abspath(args.rein)
    run = {"label": args.label, "rein": args.rein,
           "small_model": os.environ.get("REIN_SMALL_MODEL", "auto"),
           "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "loadavg_start": os.getloadavg(), "rounds": args.repeat, "tasks": []}
    for round_ in range(1, args.repeat + 1):
        for name in names:
            print(f"running {name} (round {round_} of {args.repeat}) ...", file=sys.stderr, flush=True)
            result = run_task(name, args.rein, args.timeout)
            result["round"] = round_
            print(f"  {'solved' if result['solved'] else 'not solved'} in {result['wall_s']} s "
                  f"({result['requests']} requests)", file=sys.stderr, flush=True)
            run["tasks"].append(result)
    run["loadavg_end"] = os.getloadavg()
    run["model"] = next((t["model"] for t in run["tasks"] if t.get("model")), None)
    run["totals"] = totals(run["tasks"])
    if args.repeat > 1:
        run["repeat_totals"] = repeat_totals(run["tasks"], args.repeat)
    out = args.out or os.path.join(HERE, "results", time.strftime("%Y%m%d-%H%M%S") + (f"-{args.label}" if args.label else "") + ".json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(run, f, indent=1)
    print_table(run)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
