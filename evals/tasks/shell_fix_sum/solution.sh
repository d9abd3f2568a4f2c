sed -i 's/^total=1/total=0/' sum.sh
