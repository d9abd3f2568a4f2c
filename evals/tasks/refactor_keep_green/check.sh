python3 - <<'PY'
import ast, shapes
tree = ast.parse(open("shapes.py").read())
fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "area_square")
calls = [n.func.id for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
assert "area_rect" in calls, calls
assert shapes.area_square(4) == 16 and shapes.area_rect(2, 3) == 6
try:
    shapes.area_square(-1)
    raise SystemExit("no ValueError")
except ValueError:
    pass
PY
