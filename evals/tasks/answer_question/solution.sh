echo "It listens on port 8080" > "$EVAL_ANSWER"
