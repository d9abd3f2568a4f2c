python3 - <<'PY'
from calc import average, total
assert average([2, 4, 6]) == 4
assert average([5]) == 5
assert average([1, 2]) == 1.5
assert total([1, 2, 3]) == 6
PY
