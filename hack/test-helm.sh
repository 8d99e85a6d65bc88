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

# Facility metrics and Kepler: off, neither Deployment gets their
# variables; on, the controller gets the Prometheus, the queries and the
# switches, and the extender ENABLE_FACILITY_METRICS. Each check looks at
# one Deployment's render.
deployment() { render --show-only "templates/$1-deployment.yaml" "${@:2}"; }
# wantenv FILE NAME VALUE: the render sets variable NAME to VALUE.
wantenv() {
	grep -A1 -E -- "^ *- name: $2\$" "$1" | grep -Fq -- "value: \"$3\"" ||
		fail "$(basename "$1"): no $2=\"$3\""
}
facility='ENABLE_FACILITY_METRICS|FACILITY_[A-Z_]+|ENABLE_KEPLER_POWER|KEPLER_[A-Z_]+'
deployment controller >"$out/controller-default.yaml"
deployment extender >"$out/extender-default.yaml"
nowant "$out/controller-default.yaml" "name: ($facility)\$" "facility metrics and Kepler are off by default"
nowant "$out/extender-default.yaml" "name: ($facility)\$" "facility metrics are off by default"
on=(--set facilityMetrics.enabled=true --set facilityMetrics.kepler.enabled=true
	--set facilityMetrics.prometheusUrl=http://prom.example:9090/prometheus --set facilityMetrics.pollInterval=1m
	--set facilityMetrics.queries.itPower='sum(site_it_watts{hall="a"})')
deployment controller "${on[@]}" >"$out/controller-facility.yaml"
deployment extender "${on[@]}" >"$out/extender-facility.yaml"
wantenv "$out/controller-facility.yaml" ENABLE_FACILITY_METRICS true
wantenv "$out/controller-facility.yaml" FACILITY_PROMETHEUS_URL http://prom.example:9090/prometheus
wantenv "$out/controller-facility.yaml" FACILITY_POLL_INTERVAL 1m
wantenv "$out/controller-facility.yaml" FACILITY_QUERY_TIMEOUT 10s
wantenv "$out/controller-facility.yaml" FACILITY_AMBIENT_TEMP_METRIC datacenter_ambient_temperature_celsius
wantenv "$out/controller-facility.yaml" FACILITY_IT_POWER_METRIC 'sum(site_it_watts{hall=\"a\"})'
wantenv "$out/controller-facility.yaml" FACILITY_COOLING_POWER_METRIC datacenter_cooling_power_watts
wantenv "$out/controller-facility.yaml" ENABLE_KEPLER_POWER true
wantenv "$out/controller-facility.yaml" KEPLER_NODE_POWER_QUERY 'sum by (node_name) (rate(kepler_node_platform_joules_total[1m]))'
wantenv "$out/controller-facility.yaml" KEPLER_NODE_LABEL node_name
wantenv "$out/extender-facility.yaml" ENABLE_FACILITY_METRICS true
nowant "$out/extender-facility.yaml" "name: (FACILITY_[A-Z_]+|ENABLE_KEPLER_POWER|KEPLER_[A-Z_]+)\$" "the extender needs only the switch"
# Kepler alone still needs the Prometheus, but not the facility poller.
deployment controller --set facilityMetrics.kepler.enabled=true >"$out/controller-kepler.yaml"
deployment extender --set facilityMetrics.kepler.enabled=true >"$out/extender-kepler.yaml"
wantenv "$out/controller-kepler.yaml" ENABLE_KEPLER_POWER true
wantenv "$out/controller-kepler.yaml" FACILITY_PROMETHEUS_URL http://prometheus-operated.monitoring.svc:9090
nowant "$out/controller-kepler.yaml" 'name: (ENABLE_FACILITY_METRICS|FACILITY_[A-Z_]+_METRIC)$' "Kepler alone leaves the facility poller off"
nowant "$out/extender-kepler.yaml" "name: ($facility)\$" "Kepler is the controller's alone"
# The older extender-only switch still reaches the extender, and only it.
deployment controller --set extender.enableFacilityMetrics=true >"$out/controller-legacy.yaml"
deployment extender --set extender.enableFacilityMetrics=true >"$out/extender-legacy.yaml"
wantenv "$out/extender-legacy.yaml" ENABLE_FACILITY_METRICS true
nowant "$out/controller-legacy.yaml" "name: ($facility)\$" "extender.enableFacilityMetrics is the extender's alone"
"$helm" lint --strict "$chart" "${on[@]}"

# The schema refuses what the programs would refuse at start.
for bad in controller.policy.type=greedy controller.caps.cpuEcoCapPctOfMax=0 controller.policy.reconcileInterval=soon \
	controller.unknownKey=1 extender.logFormat=xml agents.group=bad\'quote \
	facilityMetrics.prometheusUrl=prom:9090 facilityMetrics.prometheusUrl=http://prom:9090/?x=1 \
	facilityMetrics.pollInterval=often facilityMetrics.kepler.unknownKey=1; do
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
