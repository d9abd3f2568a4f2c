want=$(wc -w < notes.txt | tr -d ' ')
[ "$(python3 count_words.py | tr -d '[:space:]')" = "$want" ] && grep -q "$want" "$EVAL_ANSWER"
