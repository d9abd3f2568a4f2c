sed -i 's/get_usr/get_user/g' users.py report.py app.py
