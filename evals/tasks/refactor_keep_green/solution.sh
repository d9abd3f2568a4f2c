python3 - <<'PY'
s = open("shapes.py").read()
s = s.replace('''    if side < 0:
        raise ValueError("negative size")
    return side * side''', "    return area_rect(side, side)")
open("shapes.py", "w").write(s)
PY
