[ -x hello.sh ] && [ "$(./hello.sh)" = 'Hello, world!' ] && [ "$(./hello.sh ada)" = 'Hello, ada!' ]
