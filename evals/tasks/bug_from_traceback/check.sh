python3 stats.py >/dev/null &&
python3 -c 'from stats import mean, summary; assert mean([]) == 0.0 and mean([1, 2, 3]) == 2 and summary([]) == {"n": 0, "mean": 0.0} and summary([4]) == {"n": 1, "mean": 4}'
