sed -i 's/    year % 4 == 0 \&\& year % 100 != 0/    year % 4 == 0 \&\& (year % 100 != 0 || year % 400 == 0)/' src/lib.rs
