echo "It is defined in pkg/net/wire.py" > "$EVAL_ANSWER"
