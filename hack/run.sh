#!/usr/bin/env bash
# Runs joulie-agentd on this host in standalone mode, the way a newcomer
# first meets Joulie: the daemon discovers the hardware and enforces the
# default standalone profile (performance, no caps: nothing is changed),
# joulie-agentctl shows what it found, and Ctrl-C stops the daemon, which
# restores anything it changed. State and socket live in a temporary
# directory, so nothing is left behind.
#
# RUN_SECONDS=N stops after N seconds instead of waiting for Ctrl-C.
# Extra arguments go to joulie-agentd (e.g. --config my.yaml).
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d /tmp/joulie-run.XXXXXX)
sock="$work/agentd.sock"
agentd=(bin/joulie-agentd --config "" --state-dir "$work/state" --socket "$sock"
	--metrics-address 127.0.0.1:9477 --reconcile-interval 2s "$@")
ctl=(bin/joulie-agentctl --socket "$sock")

"${agentd[@]}" 2>"$work/agentd.log" &
pid=$!
stop() {
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	echo
	echo "== joulie-agentd log"
	cat "$work/agentd.log"
	rm -rf "$work"
}
trap stop EXIT

for _ in $(seq 100); do
	[ -S "$sock" ] && break
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "joulie-agentd exited; its log follows" >&2
		exit 1
	fi
	sleep 0.1
done

echo "== joulie-agentctl status"
"${ctl[@]}" status
echo
echo "== joulie-agentctl hardware"
"${ctl[@]}" hardware
echo
echo "Metrics: curl -s http://127.0.0.1:9477/metrics | grep ^joulie"
if [ -n "${RUN_SECONDS:-}" ]; then
	sleep "$RUN_SECONDS"
else
	echo "joulie-agentd is running (pid $pid); Ctrl-C stops it and restores what it changed."
	wait "$pid"
fi
