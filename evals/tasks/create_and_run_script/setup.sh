cat > notes.txt <<'TXT'
The quick brown fox jumps over the lazy dog.
Pack my box with five dozen liquor jugs.
  How   vexingly quick daft zebras jump!
TXT
