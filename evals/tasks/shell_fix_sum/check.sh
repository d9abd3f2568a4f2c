printf '10\n20\n12\n' > "$EVAL_TMP/n.txt"
printf '7\n' > "$EVAL_TMP/one.txt"
[ "$(bash sum.sh numbers.txt)" = 12 ] && [ "$(bash sum.sh "$EVAL_TMP/n.txt")" = 42 ] && [ "$(bash sum.sh "$EVAL_TMP/one.txt")" = 7 ]
