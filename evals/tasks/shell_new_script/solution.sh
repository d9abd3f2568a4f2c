printf '#!/usr/bin/env bash\necho "Hello, ${1:-world}!"\n' > hello.sh && chmod +x hello.sh
