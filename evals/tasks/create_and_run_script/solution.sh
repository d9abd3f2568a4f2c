echo 'print(len(open("notes.txt").read().split()))' > count_words.py
python3 count_words.py > "$EVAL_ANSWER"
