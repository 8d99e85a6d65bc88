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

everything=(--set serviceMonitor.enabled=true --set grafanaDashboard.enabled=true --set viewer.enabled=true --set viewer.groups={ops} --set extender.tls.secretName=joulie-extender-tls)

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
want "$out/default.yaml" '^  name: joulie-node-keys$' "the policy keeping nodes' own credentials off Joulie's node keys"
want "$out/default.yaml" 'nodeSelector: "joulie.io/managed=true"' "the node selector's default"
want "$out/default.yaml" '^ *- --config=/etc/joulie/controller.yaml$' "the controller reads its configuration file"
want "$out/default.yaml" '^ *- --config=/etc/joulie/extender.yaml$' "the extender reads its configuration file"
want "$out/default.yaml" 'urlPrefix: "http://joulie-extender.joulie-system.svc:9876"' "the scheduler snippet's URL"
want "$out/default.yaml" 'enableHTTPS: false' "plain HTTP by default"
want "$out/default.yaml" '^ *type: MostAllocated$' "the scheduler profile packs"
want "$out/default.yaml" '^ *- name: nvidia.com/gpu$' "the scheduler profile packs NVIDIA GPUs"
want "$out/default.yaml" '^ *- name: amd.com/gpu$' "the scheduler profile packs AMD GPUs"
want "$out/default.yaml" '^ *resources: \["nodes", "pods"\]$' "the extender may watch Nodes and pods"
nowant "$out/default.yaml" '^kind: ServiceMonitor$' "ServiceMonitor is opt-in"
nowant "$out/default.yaml" 'grafana_dashboard' "the dashboard is opt-in"
want "$out/everything.yaml" 'urlPrefix: "https://joulie-extender.joulie-system.svc:9876"' "the HTTPS URL with TLS"
want "$out/everything.yaml" 'enableHTTPS: true' "enableHTTPS with TLS"
want "$out/everything.yaml" 'secretName: joulie-extender-tls' "the TLS Secret mounted"
want "$out/everything.yaml" '^kind: ServiceMonitor$' "ServiceMonitor when enabled"
want "$out/everything.yaml" 'grafana_dashboard: "1"' "the dashboard's sidecar label"

# Facility metrics and Kepler: off, neither configuration file has their
# keys; on, the controller's gets the Prometheus, the queries and the
# switches, and the extender's enableFacilityMetrics. Each check looks at
# one program's ConfigMap.
config() { render --show-only "templates/$1-config.yaml" "${@:2}"; }
# wantkey FILE KEY VALUE: the configuration sets KEY (indented as in its
# block) to VALUE as written in YAML.
wantkey() {
	grep -Eq -- "^ *$2: " "$1" && grep -E -- "^ *$2: " "$1" | grep -Fq -- "$2: $3" ||
		fail "$(basename "$1"): no $2: $3"
}
facility='enableFacilityMetrics|facility|kepler'
config controller >"$out/controller-default.yaml"
config extender >"$out/extender-default.yaml"
nowant "$out/controller-default.yaml" "^ *($facility):" "facility metrics and Kepler are off by default"
nowant "$out/extender-default.yaml" "^ *($facility):" "facility metrics are off by default"
wantkey "$out/controller-default.yaml" leaderElectionId '"joulie-controller"'
wantkey "$out/controller-default.yaml" productLabelKeys '"nvidia.com/gpu.product,amd.com/gpu.product"'
wantkey "$out/extender-default.yaml" maxInflightBytes '"160Mi"'
wantkey "$out/extender-default.yaml" scoringMode '"pack"'
config controller --set-json 'controller.caps.gpuProductLabelKeys=[]' >"$out/controller-nolabels.yaml"
wantkey "$out/controller-nolabels.yaml" productLabelKeys '""'
on=(--set facilityMetrics.enabled=true --set facilityMetrics.kepler.enabled=true
	--set facilityMetrics.prometheusUrl=http://prom.example:9090/prometheus --set facilityMetrics.pollInterval=1m
	--set facilityMetrics.queries.itPower='sum(site_it_watts{hall="a"})')
config controller "${on[@]}" >"$out/controller-facility.yaml"
config extender "${on[@]}" >"$out/extender-facility.yaml"
wantkey "$out/controller-facility.yaml" enableFacilityMetrics true
wantkey "$out/controller-facility.yaml" prometheusURL '"http://prom.example:9090/prometheus"'
wantkey "$out/controller-facility.yaml" pollInterval '"1m"'
wantkey "$out/controller-facility.yaml" queryTimeout '"10s"'
wantkey "$out/controller-facility.yaml" ambientTempMetric '"datacenter_ambient_temperature_celsius"'
wantkey "$out/controller-facility.yaml" itPowerMetric '"sum(site_it_watts{hall=\"a\"})"'
wantkey "$out/controller-facility.yaml" coolingPowerMetric '"datacenter_cooling_power_watts"'
wantkey "$out/controller-facility.yaml" enabled true
wantkey "$out/controller-facility.yaml" nodePowerQuery '"sum by (node_name) (rate(kepler_node_platform_joules_total[1m]))"'
wantkey "$out/controller-facility.yaml" nodeLabel '"node_name"'
wantkey "$out/extender-facility.yaml" enableFacilityMetrics true
nowant "$out/extender-facility.yaml" "^ *(facility|kepler):" "the extender needs only the switch"
# Kepler alone still needs the Prometheus, but not the facility poller.
config controller --set facilityMetrics.kepler.enabled=true >"$out/controller-kepler.yaml"
config extender --set facilityMetrics.kepler.enabled=true >"$out/extender-kepler.yaml"
wantkey "$out/controller-kepler.yaml" enabled true
wantkey "$out/controller-kepler.yaml" prometheusURL '"http://prometheus-operated.monitoring.svc:9090"'
nowant "$out/controller-kepler.yaml" '^ *(enableFacilityMetrics|[a-zA-Z]+Metric):' "Kepler alone leaves the facility poller off"
nowant "$out/extender-kepler.yaml" "^ *($facility):" "Kepler is the controller's alone"
# The older extender-only switch still reaches the extender, and only it.
config controller --set extender.enableFacilityMetrics=true >"$out/controller-legacy.yaml"
config extender --set extender.enableFacilityMetrics=true >"$out/extender-legacy.yaml"
wantkey "$out/extender-legacy.yaml" enableFacilityMetrics true
nowant "$out/controller-legacy.yaml" "^ *($facility):" "extender.enableFacilityMetrics is the extender's alone"
# With TLS the extender's file names the mounted key pair.
config extender --set extender.tls.secretName=joulie-extender-tls >"$out/extender-tls.yaml"
wantkey "$out/extender-tls.yaml" certFile /etc/joulie-extender/tls/tls.crt

# BMC Secrets: the controller may get Secrets of the BMC namespace (its
# own, created by the chart) through a Role, never list or watch them, no
# Role of the release namespace and no ClusterRole names Secrets;
# secretNames narrows the Role to those names; the release namespace as
# the BMC namespace is refused. The IPMI keys reach the controller's file.
rbac() { render --show-only templates/controller-rbac.yaml "$@"; }
rbac >"$out/rbac-default.yaml"
awk '/^kind: Role$/{r=1} /^---/{r=0} r' "$out/rbac-default.yaml" >"$out/rbac-roles.yaml"
want "$out/rbac-roles.yaml" 'name: joulie-controller-bmc-credentials$' "the Role for BMC credentials"
want "$out/rbac-roles.yaml" '^  namespace: joulie-bmc$' "the Role in the BMC namespace"
want "$out/rbac-roles.yaml" 'resources: \["secrets"\]' "the Role names Secrets"
want "$out/rbac-default.yaml" '^kind: Namespace$' "the BMC namespace created"
want "$out/rbac-default.yaml" 'helm.sh/resource-policy: keep' "the BMC namespace kept on uninstall"
awk '/^kind: Role$/{r=1} /^---/{r=0} r' "$out/rbac-default.yaml" | awk '/^kind: Role$/{n=0} /^  namespace: joulie-system$/{n=1} /secrets/{if(n)print}' | grep -q . &&
	fail "a Role of the release namespace names Secrets"
rbac --set controller.parking.ipmi.createSecretNamespace=false >"$out/rbac-nons.yaml"
nowant "$out/rbac-nons.yaml" '^kind: Namespace$' "createSecretNamespace false"
if rbac --set controller.parking.ipmi.secretNamespace=joulie-system >/dev/null 2>"$out/err"; then
	fail "the release namespace was accepted as the BMC namespace"
fi
grep -q 'need a namespace of their own' "$out/err" || fail "the BMC namespace check failed for another reason: $(cat "$out/err")"
awk '/^kind: ClusterRole$/{r=1} /^---/{r=0} r' "$out/rbac-default.yaml" >"$out/rbac-clusterrole.yaml"
want "$out/rbac-clusterrole.yaml" 'resources: \["nodes"\]' "the controller's ClusterRole"
nowant "$out/rbac-clusterrole.yaml" 'secrets' "no ClusterRole reaches Secrets"
secretRule=$(grep -A1 'resources: \["secrets"\]' "$out/rbac-roles.yaml" | tail -1)
[ "$secretRule" = '  verbs: ["get"]' ] || fail "the Secrets rule grants $secretRule, want get only"
nowant "$out/rbac-roles.yaml" '^  resourceNames:' "any Secret name by default"
rbac --set-json 'controller.parking.ipmi.secretNames=["bmc-rack-1"]' >"$out/rbac-names.yaml"
want "$out/rbac-names.yaml" '^    - bmc-rack-1$' "secretNames narrows the Role"
wantkey "$out/controller-default.yaml" cipherSuites '"17,3"'
wantkey "$out/controller-default.yaml" privilege '"operator"'
wantkey "$out/controller-default.yaml" callTimeout '"30s"'
wantkey "$out/controller-default.yaml" secretNamespace '"joulie-bmc"'

# Parking is off by default, and every parking.* value reaches the
# controller's file; a node pool's selector replaces the label rule.
wantkey "$out/controller-default.yaml" enabled false
wantkey "$out/controller-default.yaml" nodeSelector '"joulie.io/parkable=true"'
wantkey "$out/controller-default.yaml" settleTime '"10m"'
wantkey "$out/controller-default.yaml" maxWakeAttempts 3
park=(--set controller.parking.enabled=true --set controller.parking.nodeSelector=cloud.example/pool=batch
	--set controller.parking.settleTime=2m --set controller.parking.reserveFloor=2 --set controller.parking.reserveSizing=mean
	--set controller.parking.reserveFor=any
	--set controller.parking.bootTime=3m --set controller.parking.lookback=30m --set controller.parking.parksPerMinute=1
	--set controller.parking.wakesPerMinute=4 --set controller.parking.grace=10s --set controller.parking.resumeTimeout=6m
	--set controller.parking.maxWakeAttempts=2 --set controller.parking.syncInterval=3s)
config controller "${park[@]}" >"$out/controller-parking.yaml"
config extender "${park[@]}" >"$out/extender-parking.yaml"
for kv in 'enabled true' 'nodeSelector "cloud.example/pool=batch"' 'settleTime "2m"' 'reserveFloor 2' 'reserveSizing "mean"' 'reserveFor "any"' \
	'bootTime "3m"' 'lookback "30m"' 'parksPerMinute 1' 'wakesPerMinute 4' 'grace "10s"' 'resumeTimeout "6m"' \
	'maxWakeAttempts 2' 'syncInterval "3s"'; do
	wantkey "$out/controller-parking.yaml" ${kv% *} "${kv#* }"
done
"$helm" lint --strict "$chart" "${park[@]}"

# Each rendered file is one its program accepts: the programs' own
# loaders read them (a Go test that runs only when given the files).
mkdir "$out/configs"
for f in default facility kepler legacy parking; do
	for p in controller extender; do
		sed -n '/^  [a-z]*\.yaml: |$/,$p' "$out/$p-$f.yaml" | tail -n +2 | sed 's/^    //' >"$out/configs/$p-$f.yaml"
	done
done
JOULIE_CHART_CONFIGS="$out/configs" ${GO:-go} test -count=1 -run TestDocumentsAndChartAgreeWithTheKeyTable ./controller/internal/config ./extender/internal/config >"$out/go-test.log" 2>&1 ||
	fail "a program refuses the configuration file the chart renders: $(cat "$out/go-test.log")"
"$helm" lint --strict "$chart" "${on[@]}"

# The schema refuses what the programs would refuse at start.
for bad in controller.policy.type=greedy controller.caps.cpuEcoCapPctOfMax=0 controller.policy.reconcileInterval=soon \
	controller.unknownKey=1 extender.logFormat=xml extender.scoringMode=binpack \
	extender.scheduler.nodeResourcesFit.scoringStrategy=Spread extender.scheduler.nodeResourcesFit.resources[0].weight=0 \
	agents.group=bad\'quote \
	facilityMetrics.prometheusUrl=prom:9090 facilityMetrics.prometheusUrl=http://prom:9090/?x=1 \
	facilityMetrics.pollInterval=often facilityMetrics.kepler.unknownKey=1 \
	controller.parking.ipmi.cipherSuites=0 'controller.parking.ipmi.cipherSuites=17\,2' controller.parking.ipmi.privilege=root \
	controller.parking.ipmi.retries=-1 controller.parking.ipmi.timeout=soon controller.parking.ipmi.secretNamespace=BMC_Secrets \
	controller.parking.enabled=yes controller.parking.nodeSelector= controller.parking.settleTime=10 \
	controller.parking.reserveFloor=-1 controller.parking.reserveSizing=p95 controller.parking.reserveFor=standard controller.parking.parksPerMinute=-1 \
	controller.parking.maxWakeAttempts=0 controller.parking.resumeTimeout=later; do
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
