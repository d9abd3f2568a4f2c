echo "# scripts" > README.md
