# No file may change, and the answer names 8080.
[ -z "$(git status --porcelain --untracked-files=all -- . ':!.rein')" ] && grep -q '8080' "$EVAL_ANSWER"
