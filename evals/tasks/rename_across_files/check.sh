! grep -rq 'get_usr' --include='*.py' . &&
[ "$(python3 app.py)" = "$(printf 'ada\nada, grace, unknown')" ] &&
python3 -c 'from users import get_user; assert get_user(2) == "grace"'
