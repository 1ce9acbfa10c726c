#!/bin/bash
# agentfix-healthcheck asks the bot's own HTTP listener for a health
# endpoint and exits 0 only on a 200 answer. It is the image's HEALTHCHECK.
#
#   agentfix-healthcheck [PATH]      PATH defaults to /healthz
#
# It needs nothing but bash: the runtime image has no curl or wget, and the
# bot has no health subcommand. The port (and host, if one is given) come
# from AGENTFIX_LISTEN_ADDR, as the bot reads it, so a changed listen address
# keeps the check working.
set -u
path=${1:-/healthz}
addr=${AGENTFIX_LISTEN_ADDR:-:8080}
port=${addr##*:}
host=${addr%:*}
host=${host#[}
host=${host%]}
case $host in
"" | 0.0.0.0 | "::") host=127.0.0.1 ;;
esac
if ! exec 3<>"/dev/tcp/$host/$port"; then
	echo "agentfix-healthcheck: cannot connect to $host:$port" >&2
	exit 1
fi
printf 'GET %s HTTP/1.0\r\nHost: localhost\r\nConnection: close\r\n\r\n' "$path" >&3
if ! IFS= read -r -t 5 status <&3; then
	echo "agentfix-healthcheck: no answer from $host:$port$path" >&2
	exit 1
fi
status=${status%$'\r'}
case $status in
"HTTP/1."?" 200"*) exit 0 ;;
esac
echo "agentfix-healthcheck: $path answered: $status" >&2
exit 1
