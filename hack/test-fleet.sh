#!/usr/bin/env bash
# The fleet rollout test: ansible/site.yml over five booted Debian
# containers (hack/container.sh), as an operator runs it, in batches
# scaled to the fleet ([1, 2]: fleet-1 alone, then fleet-2 and fleet-3,
# then fleet-4 and fleet-5), from a signed apt repository, each host given
# its own identity joulie:agent:<host> through the CSR API of one control
# plane (test/cmd/joulie-testcluster).
#
#   1. broken: fleet-3's repository server is unreachable. The play stops at
#      the playbook's threshold (more than 10% of a batch failed) with the
#      host and the reason in its output; fleet-1, the finished batch,
#      keeps running and follows a change of its NodePowerProfile; fleet-4
#      and fleet-5 are untouched.
#   2. fixed: the rerun completes all five hosts; the next run reports
#      changed=0 on each, every agent has its own certificate and writes
#      its own objects (the API server's audit log).
#   3. upgrade: a newer package (built with a newer version string) joins
#      the repository and site.yml upgrades to it. From the hosts' service
#      stop and start times, no host of a batch stopped before every host
#      of the batch before was up again; the fixture limits, sampled before,
#      during and after, are only ever the cap or the original, never
#      uncapped in two batches at once, and all capped at the end; every
#      agent reports the new version in `joulie-agentctl status`.
#
# All containers share one private network namespace, whose loopback also
# carries the control plane, the repository and Ansible's control node.
#
# Usage: hack/test-fleet.sh PACKAGE NEWER_PACKAGE  (the .debs; needs root)
# Environment: JOULIE_HELM and GO (from make test-install), JOULIE_KEEP=1.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/container.sh

t0=$SECONDS
step() { printf '\n== [%ds] %s\n' "$((SECONDS - t0))" "$*"; }
fail() {
	printf 'test-fleet: FAIL: %s\n' "$*" >&2
	exit 1
}
[ "$(id -u)" -eq 0 ] || fail "needs root (systemd-nspawn)"
[ "$#" -eq 2 ] || { echo "usage: $0 PACKAGE NEWER_PACKAGE" >&2; exit 2; }
for f in "$1" "$2"; do [ -f "$f" ] || fail "no package $f (make package)"; done
deb=$(realpath "$1") newer_deb=$(realpath "$2")
command -v ansible-playbook >/dev/null || fail "ansible-playbook is missing (make deps)"
tarball=$(ct_rootfs_tarball)
[ -f "$tarball" ] || fail "no cached rootfs $tarball (hack/test-install.sh builds it)"

hosts=(fleet-1 fleet-2 fleet-3 fleet-4 fleet-5)
broken=fleet-3
batches_json='[1, 2]'
# The batches site.yml makes of the inventory's order with [1, 2].
batch_of() { case $1 in fleet-1) echo 1 ;; fleet-2 | fleet-3) echo 2 ;; *) echo 3 ;; esac; }
repo_port=8765
dead_port=8799

work=$(mktemp -d /var/tmp/joulie-fleet.XXXXXX)
helpers=()
netns_pid=""
cleanup() {
	local rc=$?
	if [ "$rc" -ne 0 ]; then
		for h in "${!ct_leader[@]}"; do
			echo "== $h: journal of joulie-agentd (the test failed)" >&2
			ct_in "$h" journalctl --no-pager -n 30 -u joulie-agentd.service >&2 || true
		done
	fi
	# The control plane takes up to a minute to stop: the containers power
	# off and their trees go meanwhile.
	[ "${#helpers[@]}" -eq 0 ] || kill "${helpers[@]}" 2>/dev/null || true
	ct_cleanup
	[ -z "$netns_pid" ] || { kill "$netns_pid" 2>/dev/null || true; wait "$netns_pid" 2>/dev/null || true; }
	[ "${JOULIE_KEEP:-}" = 1 ] || rm -rf "${hosts[@]/#/$work/}"
	[ "${#helpers[@]}" -eq 0 ] || wait "${helpers[@]}" 2>/dev/null || true
	[ -z "${GNUPGHOME:-}" ] || gpgconf --kill gpg-agent 2>/dev/null || true
	if [ "${JOULIE_KEEP:-}" = 1 ]; then echo "test-fleet: kept $work" >&2; else rm -rf "$work"; fi
	[ "$rc" -ne 0 ] || echo "test-fleet: PASS in $((SECONDS - t0)) s"
}
trap cleanup EXIT

# --- the fleet ---------------------------------------------------------------

step "boot ${hosts[*]} in one private network namespace"
unshare --net sleep infinity &
netns_pid=$!
sleep 0.2
netns() { nsenter --net="/proc/$netns_pid/ns/net" -- "$@"; }
netns_bg() { (exec nsenter --net="/proc/$netns_pid/ns/net" -- "$@") & }
netns ip link set lo up
port=9477
for h in "${hosts[@]}"; do
	ct_unpack "$h" "$tarball"
	# Real hosts have a network each; these share one, where the package's
	# default configuration (metrics on :9477) would have the agents of one
	# batch fight over the port until the role configures them.
	printf '[Service]\nEnvironment=JOULIE_METRICS_ADDRESS=127.0.0.1:%s\n' "$port" \
		>"$(ct_root "$h")/etc/systemd/system/joulie-agentd.service.d/test-fleet-port.conf"
	port=$((port + 1))
	# No Debian mirror is reachable from the fleet's network; the Joulie
	# repository is its only package source.
	rm -f "$(ct_root "$h")/etc/apt/sources.list"
	ct_start "$h" --network-namespace-path="/proc/$netns_pid/ns/net"
done
for h in "${hosts[@]}"; do
	ct_wait_booted "$h" || fail "boot $h"
done
echo "ok: booted in $((SECONDS - t0)) s"

step "the control plane (joulie-testcluster) and the signed repository"
mkdir -p "$work/bin"
(cd test && ${GO:-go} build -race -o "$work/bin/joulie-testcluster" ./cmd/joulie-testcluster) || fail "build joulie-testcluster"
cluster=$work/cluster
netns_bg "$work/bin/joulie-testcluster" -dir "$cluster" -chart packaging/helm/joulie >"$work/testcluster.log" 2>&1
helpers+=("$!")
for _ in $(seq 180); do
	[ -e "$cluster/ready" ] && break
	kill -0 "${helpers[0]}" 2>/dev/null || { cat "$work/testcluster.log" >&2; fail "joulie-testcluster exited"; }
	sleep 1
done
[ -e "$cluster/ready" ] || { cat "$work/testcluster.log" >&2; fail "joulie-testcluster not ready after 180 s"; }
# Each node's target, as the controller would leave it: eco at 60%.
kube "
for n in '${hosts[*]}'.split():
    core.create_node({'metadata': {'name': n, 'labels': {'joulie.io/managed': 'true'}}})
    custom.create_cluster_custom_object('joulie.io', 'v1alpha1', 'nodepowerprofiles', {
        'apiVersion': 'joulie.io/v1alpha1', 'kind': 'NodePowerProfile', 'metadata': {'name': n},
        'spec': {'profile': 'eco', 'cpu': {'packagePowerCapPctOfMax': 60}}})
" >/dev/null || fail "create the nodes and their NodePowerProfiles"
set_pct() {
	kube "custom.patch_cluster_custom_object('joulie.io', 'v1alpha1', 'nodepowerprofiles', '$1', {'spec': {'cpu': {'packagePowerCapPctOfMax': $2}}})" >/dev/null
}

repo=$work/repo
mkdir -p "$repo"
export GNUPGHOME=$work/gnupg
mkdir -m 0700 "$GNUPGHOME"
gpg --batch --quiet --passphrase '' --quick-gen-key 'Joulie fleet test repository' ed25519 sign never 2>/dev/null ||
	fail "make the repository's signing key"
gpg --batch --armor --export >"$repo/joulie.asc"
# publish DEB...: the repository holds these packages, signed (InRelease).
publish() {
	cp "$@" "$repo/"
	(
		cd "$repo"
		dpkg-scanpackages --multiversion . /dev/null >Packages 2>/dev/null
		{
			echo "Origin: Joulie fleet test"
			echo "Label: Joulie fleet test"
			echo "Date: $(LC_ALL=C date -Ru)"
			echo "SHA256:"
			printf ' %s %s Packages\n' "$(sha256sum <Packages | cut -d' ' -f1)" "$(stat -c %s Packages)"
		} >Release
		gpg --batch --yes --clearsign -o InRelease Release
	) || fail "publish $*"
}
publish "$deb"
netns_bg python3 -m http.server --bind 127.0.0.1 --directory "$repo" "$repo_port" >"$work/repo-http.log" 2>&1
helpers+=("$!")
for _ in $(seq 50); do
	netns python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$repo_port/InRelease')" 2>/dev/null && break
	sleep 0.1
done

# inventory FILE [HOST-LINES]: the fleet, in batch order, from the
# repository; HOST-LINES go under the broken host.
inventory() {
	{
		echo "all:"
		echo "  children:"
		echo "    joulie_agents:"
		echo "      hosts:"
		for h in "${hosts[@]}"; do
			echo "        $h:"
			echo "          ansible_nsenter_pid: ${ct_leader[$h]}"
			[ "$h" != "$broken" ] || printf '%s' "${2:-}"
		done
		cat <<INV
      vars:
        ansible_connection: community.docker.nsenter
        ansible_become: false
        ansible_python_interpreter: /usr/bin/python3
        joulie_agent_apt_repo: "deb [signed-by=/etc/apt/keyrings/joulie.asc] http://127.0.0.1:$repo_port/ ./"
        joulie_agent_apt_key_url: http://127.0.0.1:$repo_port/joulie.asc
        joulie_agent_api_server: $(cat "$cluster/server")
        joulie_agent_api_ca_file: $cluster/ca.crt
        joulie_agent_admin_kubeconfig: $cluster/admin.kubeconfig
        joulie_agent_config:
          hostRoot: $ct_fixture
          metricsAddress: ""
          reconcileInterval: 1s
          nvmlLibraryPath: none
          amdsmiLibraryPath: none
INV
	} >"$1"
}
# The broken host's repository is a server where nothing listens.
inventory "$work/inventory-broken.yml" \
	"          joulie_agent_apt_repo: \"deb [signed-by=/etc/apt/keyrings/joulie.asc] http://127.0.0.1:$dead_port/ ./\"
          joulie_agent_apt_key_url: http://127.0.0.1:$dead_port/joulie.asc
"
inventory "$work/inventory.yml"

export ANSIBLE_CONFIG="$PWD/ansible/ansible.cfg" ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0
# playbook NAME INVENTORY [ARGS]: site.yml as an operator runs it; the log
# in ansible-NAME.log, the exit status in $play_rc.
playbook() {
	local name=$1 inv=$2 start=$SECONDS
	shift 2
	play_rc=0
	netns ansible-playbook -i "$inv" ansible/site.yml -e "{\"joulie_rollout_batches\": $batches_json}" "$@" \
		>"$work/ansible-$name.log" 2>&1 || play_rc=$?
	echo "-- site.yml, $name: exit $play_rc in $((SECONDS - start)) s"
	sed -n '/^PLAY RECAP/,$p' "$work/ansible-$name.log" | tr -s ' '
}
recap() { grep -E "^$1 +:" "$work/ansible-$2.log" | tr -s ' ' || true; }
recap_field() { recap "$1" "$2" | sed -n "s/.* $3=\([0-9]*\).*/\1/p"; }
wait_limit() {
	local h=$1 want=$2 what=$3 got=""
	for _ in $(seq 150); do
		got=$(ct_limit "$h")
		[ "$got" = "$want" ] && { echo "ok: $h: $what: limit $got uW"; return 0; }
		sleep 0.1
	done
	fail "$h: $what: limit is $got uW, want $want"
}
status_json() { ct_in "$1" joulie-agentctl status --output json; }
# synced HOST: the agent runs, has read its target from the API server and
# reports no error.
synced() {
	local out
	[ "$(ct_unit "$1" ActiveState)" = active ] || fail "$1: joulie-agentd is $(ct_unit "$1" ActiveState)"
	# No agent ever failed: the journal, since boot, has no failed run.
	if ct_in "$1" journalctl --no-pager -o cat -u joulie-agentd.service | grep -F "Failed with result"; then
		fail "$1: joulie-agentd failed at some point (journal above)"
	fi
	out=$(status_json "$1") || fail "$1: joulie-agentctl status"
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["node"] == sys.argv[2] and not d["standalone"], d
assert "lastSync" in d and "syncError" not in d, d
assert d["cpu"]["result"] == "applied", d["cpu"]
' "$out" "$1" || fail "$1: status: $out"
}

# --- 1. a broken host --------------------------------------------------------

step "1. site.yml with $broken's package source unreachable"
playbook broken "$work/inventory-broken.yml"
log=$work/ansible-broken.log
[ "$play_rc" -ne 0 ] || fail "site.yml succeeded with $broken broken"
grep -E "^fatal: \[$broken\]" "$log" | grep -F "127.0.0.1:$dead_port" >/dev/null ||
	{ cat "$log" >&2; fail "the output does not name $broken and its unreachable source"; }
echo "ok: the output names the host and why: $(grep -E "^fatal: \[$broken\]" "$log" | grep -o '"msg": "[^"]*"')"
[ "$(recap_field "$broken" broken failed)" = 1 ] || fail "$broken is not failed in the recap"
for h in fleet-4 fleet-5; do
	[ -z "$(recap "$h" broken)" ] || fail "the play reached $h after the failed batch: $(recap "$h" broken)"
done
echo "ok: the play stopped after batch 2 (more than 10% of it failed); fleet-4 and fleet-5 not in the recap"
# The finished batch keeps running and syncing: it follows a new target.
synced fleet-1
wait_limit fleet-1 "$ct_capped" "the finished batch, capped"
set_pct fleet-1 50 || fail "patch fleet-1's profile"
wait_limit fleet-1 100000000 "follows its NodePowerProfile set to 50% after the failed play"
set_pct fleet-1 60 || fail "patch fleet-1's profile"
wait_limit fleet-1 "$ct_capped" "back at 60%"
# The hosts not reached: no package, no configuration, no source, no
# request for an identity, the limit as it was.
for h in fleet-4 fleet-5 "$broken"; do
	root=$(ct_root "$h")
	if ct_in "$h" dpkg-query -W joulie-agent >/dev/null 2>&1; then fail "$h: joulie-agent is installed"; fi
	for f in /etc/joulie /etc/apt/sources.list.d/joulie.list /var/cache/joulie-agent; do
		[ ! -e "$root$f" ] || fail "$h: $f exists"
	done
	[ "$(ct_limit "$h")" = "$ct_original" ] || fail "$h: the limit changed: $(ct_limit "$h")"
done
[ ! -e "$(ct_root fleet-4)/etc/apt/keyrings/joulie.asc" ] || fail "fleet-4 got the repository key"
csrs=$(kube 'print(" ".join(c.metadata.name for c in certs.list_certificate_signing_request().items))')
[ -z "$csrs" ] || fail "CSRs left by the failed play: $csrs"
echo "ok: fleet-4, fleet-5 untouched (and $broken left as its failed source left it: no package, no source)"

# --- 2. fixed ----------------------------------------------------------------

step "2. site.yml after the fix, then once more"
playbook fixed "$work/inventory.yml"
[ "$play_rc" -eq 0 ] || { cat "$work/ansible-fixed.log" >&2; fail "site.yml after the fix"; }
for h in "${hosts[@]}"; do
	[ "$(recap_field "$h" fixed failed)" = 0 ] && [ "$(recap_field "$h" fixed unreachable)" = 0 ] ||
		fail "$h after the fix: $(recap "$h" fixed)"
done
playbook again "$work/inventory.yml"
[ "$play_rc" -eq 0 ] || { cat "$work/ansible-again.log" >&2; fail "site.yml, the run after the fix"; }
for h in "${hosts[@]}"; do
	[ "$(recap_field "$h" again changed)" = 0 ] || { cat "$work/ansible-again.log" >&2; fail "$h: the next run changed something: $(recap "$h" again)"; }
done
echo "ok: the next run: changed=0 on every host"
audit() { grep -F '"stage":"ResponseComplete"' "$cluster/audit.log" | grep -F "\"username\":\"joulie:agent:$1\"" | grep -F "\"resource\":\"$2\"" | grep -cE '"code":20[01]' || true; }
for h in "${hosts[@]}"; do
	synced "$h"
	[ "$(ct_limit "$h")" = "$ct_capped" ] || fail "$h: not capped: $(ct_limit "$h")"
	subject=$(openssl x509 -in "$(ct_root "$h")/etc/joulie/agent.crt" -noout -subject -nameopt RFC2253)
	[ "$subject" = "subject=CN=joulie:agent:$h,O=joulie:agents" ] || fail "$h: certificate $subject"
	[ "$(audit "$h" nodehardwares)" -gt 0 ] && [ "$(audit "$h" nodepowerprofiles)" -gt 0 ] ||
		fail "$h: no NodeHardware or NodePowerProfile status write by joulie:agent:$h in the audit log"
done
echo "ok: every host: active, synced, capped at 120 W, its own certificate joulie:agent:<host>, its own writes in the audit log"

# --- 3. rolling upgrade ------------------------------------------------------

step "3. rolling upgrade to $(basename "$newer_deb")"
new_version=$(dpkg-deb -f "$newer_deb" Version)
old_agent=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["version"])' "$(status_json fleet-1)")
new_agent=$(dpkg-deb --fsys-tarfile "$newer_deb" | tar -xO ./usr/bin/joulie-agentctl >"$work/agentctl-new" && chmod +x "$work/agentctl-new" && "$work/agentctl-new" --version | awk '{print $NF}')
[ -n "$new_agent" ] && [ "$new_agent" != "$old_agent" ] || fail "the newer package's agent reports $new_agent, the running one $old_agent: not a newer build"
declare -A pid_before=()
for h in "${hosts[@]}"; do pid_before[$h]=$(ct_unit "$h" MainPID); done
publish "$newer_deb"
# The limits, sampled every 0.2 s while the play runs: "T L1 L2 L3 L4 L5".
sampler() {
	while [ ! -e "$work/stop-sampling" ]; do
		local line="$SECONDS" h
		for h in "${hosts[@]}"; do line="$line $(ct_limit "$h")"; done
		echo "$line"
		sleep 0.2
	done
}
sampler >"$work/limits.log" &
sampler_pid=$!
helpers+=("$sampler_pid")
playbook upgrade "$work/inventory.yml" -e joulie_agent_package_state=latest
touch "$work/stop-sampling"
wait "$sampler_pid" || true
[ "$play_rc" -eq 0 ] || { cat "$work/ansible-upgrade.log" >&2; fail "the upgrade"; }

# From systemd: when each host's old agent began to stop and its new one
# was ready (CLOCK_MONOTONIC, one clock for all containers).
declare -A down=() up=()
for h in "${hosts[@]}"; do
	[ "$(ct_in "$h" dpkg-query -W -f '${Version}' joulie-agent)" = "$new_version" ] || fail "$h: not upgraded"
	[ "$(ct_unit "$h" MainPID)" != "${pid_before[$h]}" ] || fail "$h: the agent did not restart"
	down[$h]=$(ct_unit "$h" ActiveExitTimestampMonotonic)
	up[$h]=$(ct_unit "$h" ActiveEnterTimestampMonotonic)
	printf '%s (batch %s): restarting from %s to %s us\n' "$h" "$(batch_of "$h")" "${down[$h]}" "${up[$h]}"
done
for a in "${hosts[@]}"; do
	for b in "${hosts[@]}"; do
		[ "$(batch_of "$a")" -lt "$(batch_of "$b")" ] || continue
		[ "${up[$a]}" -lt "${down[$b]}" ] ||
			fail "$b (batch $(batch_of "$b")) began to restart before $a (batch $(batch_of "$a")) was up again"
	done
done
echo "ok: at most one batch restarting at any moment"
# The samples: each limit is the cap or the original, and the hosts not at
# the cap in one sample all belong to one batch.
python3 - "$work/limits.log" "$ct_capped" "$ct_original" "${hosts[@]}" <<'PY' || fail "the limits sampled during the upgrade (above)"
import sys
log, capped, original, hosts = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
batch = {"fleet-1": 1, "fleet-2": 2, "fleet-3": 2, "fleet-4": 3, "fleet-5": 3}
samples = [l.split() for l in open(log) if l.strip()]
assert len(samples) > 10, "too few samples: %d" % len(samples)
assert all(v == capped for v in samples[0][1:]), "not all capped before: %s" % samples[0]
bad = 0
uncapped = set()
for s in samples:
    lim = dict(zip(hosts, s[1:]))
    off = [h for h, v in lim.items() if v != capped]
    uncapped.update(off)
    if any(v not in (capped, original) for v in lim.values()) or len({batch[h] for h in off}) > 1:
        print("sample at %ss: %s" % (s[0], lim)); bad += 1
print("%d samples of %d hosts; at the original limit for a moment: %s" % (len(samples), len(hosts), " ".join(sorted(uncapped)) or "none seen"))
sys.exit(1 if bad else 0)
PY
for h in "${hosts[@]}"; do
	wait_limit "$h" "$ct_capped" "after the upgrade"
	synced "$h"
	got=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["version"])' "$(status_json "$h")")
	[ "$got" = "$new_agent" ] || fail "$h: joulie-agentctl status reports version $got, want $new_agent"
done
echo "ok: every agent reports version $new_agent (was $old_agent), synced and capped"
