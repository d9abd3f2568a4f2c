cat > stats.py <<'PY'
"""Summary statistics."""


def mean(values):
    return sum(values) / len(values)


def summary(values):
    return {"n": len(values), "mean": mean(values)}


if __name__ == "__main__":
    print(summary([1, 2, 3]))
    print(summary([]))
PY
