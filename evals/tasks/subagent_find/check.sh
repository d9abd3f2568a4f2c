grep -q 'pkg/net/wire.py' "$EVAL_ANSWER" && [ -z "$(git status --porcelain --untracked-files=all -- . ':!.rein')" ]
