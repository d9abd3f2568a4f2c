cat > sum.sh <<'SH'
#!/usr/bin/env bash
# Prints the sum of the numbers in the file $1, one number per line.
total=1
while read -r n; do
    total=$((total + n))
done < "$1"
echo "$total"
SH
printf '3\n4\n5\n' > numbers.txt
