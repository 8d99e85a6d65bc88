#!/usr/bin/env bash
# Checks the Helm chart with the pinned helm (the Makefile passes HELM):
# lint --strict with the defaults and with every optional part switched on,
# renders that hold what the README promises, a schema that refuses bad
# values, and a dashboard that only queries metrics Joulie exports. The
# integration tests then apply the rendered chart to a real API server.
set -euo pipefail
cd "$(dirname "$0")/.."

helm=${HELM:?set HELM to the helm binary (make test-helm does)}
chart=packaging/helm/joulie
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "test-helm: $*" >&2; exit 1; }

everything=(--set serviceMonitor.enabled=true --set grafanaDashboard.enabled=true --set extender.tls.secretName=joulie-extender-tls)

"$helm" lint --strict "$chart"
"$helm" lint --strict "$chart" "${everything[@]}"
"$helm" lint --strict "$chart" --set extender.enabled=false --set controller.leaderElection.enabled=false

render() { "$helm" template joulie "$chart" --namespace joulie-system "$@"; }
render >"$out/default.yaml"
render "${everything[@]}" >"$out/everything.yaml"

# want FILE PATTERN WHAT: the render must contain a line matching PATTERN.
want() { grep -Eq -- "$2" "$1" || fail "$3: no line matching '$2' in $(basename "$1")"; }
nowant() { ! grep -Eq -- "$2" "$1" || fail "$3: unexpected line matching '$2' in $(basename "$1")"; }

want "$out/default.yaml" '^kind: ValidatingAdmissionPolicy$' "the agents' admission policy"
want "$out/default.yaml" '^kind: ValidatingAdmissionPolicyBinding$' "the policy's binding"
want "$out/default.yaml" 'value: "joulie.io/managed=true"' "NODE_SELECTOR's default"
want "$out/default.yaml" 'urlPrefix: "http://joulie-extender.joulie-system.svc:9876"' "the scheduler snippet's URL"
want "$out/default.yaml" 'enableHTTPS: false' "plain HTTP by default"
nowant "$out/default.yaml" '^kind: ServiceMonitor$' "ServiceMonitor is opt-in"
nowant "$out/default.yaml" 'grafana_dashboard' "the dashboard is opt-in"
want "$out/everything.yaml" 'urlPrefix: "https://joulie-extender.joulie-system.svc:9876"' "the HTTPS URL with TLS"
want "$out/everything.yaml" 'enableHTTPS: true' "enableHTTPS with TLS"
want "$out/everything.yaml" 'secretName: joulie-extender-tls' "the TLS Secret mounted"
want "$out/everything.yaml" '^kind: ServiceMonitor$' "ServiceMonitor when enabled"
want "$out/everything.yaml" 'grafana_dashboard: "1"' "the dashboard's sidecar label"

# The schema refuses what the programs would refuse at start.
for bad in controller.policy.type=greedy controller.caps.cpuEcoCapPctOfMax=0 controller.policy.reconcileInterval=soon \
	controller.unknownKey=1 extender.logFormat=xml agents.group=bad\'quote; do
	if render --set "$bad" >/dev/null 2>"$out/err"; then
		fail "the schema accepted --set $bad"
	fi
	grep -q 'values don.t meet the specifications of the schema' "$out/err" || fail "--set $bad failed for another reason: $(cat "$out/err")"
done

# Every metric the dashboard queries is one a Joulie program registers.
dashboard=$chart/files/joulie-dashboard.json
# A histogram's series end in _bucket, _count or _sum; the code names the
# histogram.
exported() { grep -rqF --include='*.go' --exclude='*_test.go' "\"$1\"" agentd controller extender; }
metrics=$(grep -Eo 'joulie_[a-z_]+' "$dashboard" | sort -u)
[ -n "$metrics" ] || fail "no joulie_ metric in $dashboard"
for m in $metrics; do
	exported "$m" || exported "$(sed -E 's/_(bucket|count|sum)$//' <<<"$m")" ||
		fail "$dashboard queries $m, which no Joulie program exports"
done

echo "test-helm: chart lints clean, renders, and its schema and dashboard hold"
