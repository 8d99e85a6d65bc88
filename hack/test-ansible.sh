#!/usr/bin/env bash
# The Ansible rollout test: ansible/site.yml installs, configures, starts
# and verifies the agent in a booted container (hack/test-install.sh boots
# it and calls this), through the community.docker.nsenter connection,
# with the node's identity from the CSR API of a real control plane. Runs 1
# and 2 install a package file; the second must change nothing. Installing
# and upgrading from a signed apt repository is hack/test-fleet.sh's, over
# five hosts.
#
# Usage: hack/test-ansible.sh INIT_PID PACKAGE WORKDIR
#   INIT_PID  the container's init as seen from this host
#   PACKAGE   the .deb on this host (the control node)
#   WORKDIR   where the inventory and the logs go
# The container must have the fixture host of hack/test-install.sh in
# /var/lib/joulie-fixture, and no joulie-agent installed.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/container.sh

[ "$#" -eq 3 ] || { echo "usage: $0 INIT_PID PACKAGE WORKDIR" >&2; exit 2; }
leader=$1 deb=$2 work=$3
fixture=/var/lib/joulie-fixture
limit_file="/proc/$leader/root$fixture/sys/class/powercap/intel-rapl:0/constraint_0_power_limit_uw"

fail() {
	printf 'test-ansible: FAIL: %s\n' "$*" >&2
	exit 1
}
inside() {
	nsenter --target "$leader" --mount --uts --ipc --net --pid -- \
		/usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
}

command -v ansible-playbook >/dev/null || fail "ansible-playbook is missing (make deps)"
netns() { nsenter --target "$leader" --net -- "$@"; }
# netns_bg: the same in the background, with $! the program's own pid
# (nsenter execs it), so that the exit trap can stop it.
netns_bg() { (exec nsenter --target "$leader" --net -- "$@") & }
# The helpers started in the background (the control plane), stopped on
# exit.
helpers=()
stop_helpers() {
	if [ "${#helpers[@]}" -gt 0 ]; then
		kill "${helpers[@]}" 2>/dev/null || true
		wait "${helpers[@]}" 2>/dev/null || true
	fi
}
trap stop_helpers EXIT

# The package's unit may write only real sysfs; the test lets it write the
# fixture, before the role starts the agent.
inside mkdir -p /etc/systemd/system/joulie-agentd.service.d
printf '[Service]\nReadWritePaths=%s\n' "$fixture" |
	inside tee /etc/systemd/system/joulie-agentd.service.d/test-fixture.conf >/dev/null
inside systemctl daemon-reload

# The cluster: the harness's control plane as a process, with the Helm
# chart's CRDs, RBAC and admission policy, and kube-controller-manager's
# CSR signer, so the role's identity step runs for real. The container has
# a private network, so the control plane, the checks below and Ansible's control
# node run in the container's network namespace (and this host's mount
# namespace): all of them, the agent included, meet on its loopback.
echo "-- build joulie-testcluster (test/ module)"
mkdir -p "$work/bin"
# -race like the integration tests, which then reuse these packages.
(cd test && ${GO:-go} build -race -o "$work/bin/joulie-testcluster" ./cmd/joulie-testcluster) ||
	fail "build joulie-testcluster"
cluster=$work/cluster
rm -rf "$cluster"
netns_bg "$work/bin/joulie-testcluster" -dir "$cluster" -chart packaging/helm/joulie >"$work/testcluster.log" 2>&1
cluster_pid=$!
helpers+=("$cluster_pid")
for _ in $(seq 180); do
	[ -e "$cluster/ready" ] && break
	kill -0 "$cluster_pid" 2>/dev/null || { cat "$work/testcluster.log" >&2; fail "joulie-testcluster exited"; }
	sleep 1
done
[ -e "$cluster/ready" ] || { cat "$work/testcluster.log" >&2; fail "joulie-testcluster not ready after 180 s"; }
cat "$work/testcluster.log"

# The node and its target, as the controller would leave them: eco, the
# CPU capped at 60% of its maximum.
kube '
core.create_node({"metadata": {"name": "install-test", "labels": {"joulie.io/managed": "true"}}})
custom.create_cluster_custom_object("joulie.io", "v1alpha1", "nodepowerprofiles", {
    "apiVersion": "joulie.io/v1alpha1", "kind": "NodePowerProfile",
    "metadata": {"name": "install-test"},
    "spec": {"profile": "eco", "cpu": {"packagePowerCapPctOfMax": 60}}})
' >/dev/null || fail "create the node and its NodePowerProfile"

cat >"$work/inventory.yml" <<INV
all:
  children:
    joulie_agents:
      hosts:
        install-test:
          ansible_connection: community.docker.nsenter
          ansible_nsenter_pid: $leader
          # nsenter enters as root; there is no sudo in the container.
          ansible_become: false
          ansible_python_interpreter: /usr/bin/python3
          joulie_agent_package_file: $deb
          joulie_agent_node_name: install-test
          joulie_agent_api_server: $(cat "$cluster/server")
          joulie_agent_api_ca_file: $cluster/ca.crt
          joulie_agent_admin_kubeconfig: $cluster/admin.kubeconfig
          joulie_agent_config:
            hostRoot: $fixture
            metricsAddress: ""
            reconcileInterval: 1s
            nvmlLibraryPath: none
            amdsmiLibraryPath: none
INV

export ANSIBLE_CONFIG="$PWD/ansible/ansible.cfg" ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0
recap() { grep -E '^install-test +:' "$1" | tr -s ' '; }
changed() { recap "$1" | sed -n 's/.*changed=\([0-9]*\).*/\1/p'; }

# playbook N INVENTORY: run N of site.yml, its log in ansible-N.log.
playbook() {
	echo "-- ansible-playbook ansible/site.yml, run $1"
	if ! netns ansible-playbook -i "$2" ansible/site.yml >"$work/ansible-$1.log" 2>&1; then
		cat "$work/ansible-$1.log" >&2
		fail "playbook run $1"
	fi
	grep -E 'msg": ".*install-test' "$work/ansible-$1.log" | sed 's/^ *"msg": /agent: /' || true
	echo "recap $1: $(recap "$work/ansible-$1.log")"
}

playbook 1 "$work/inventory.yml"
playbook 2 "$work/inventory.yml"
[ "$(changed "$work/ansible-2.log")" = 0 ] || { cat "$work/ansible-2.log" >&2; fail "the second run changed something"; }
echo "ok: the second run changed nothing"

[ "$(inside systemctl is-active joulie-agentd.service)" = active ] || fail "joulie-agentd is not active after the rollout"
[ "$(cat "$limit_file")" = 120000000 ] || fail "the rolled-out agent did not cap the fixture: $(cat "$limit_file")"
echo "ok: joulie-agentd active, fixture capped at 120 W by the node's NodePowerProfile"

# The identity the role obtained: a certificate the cluster's signer issued
# for joulie:agent:install-test in joulie:agents, its key only root's, and
# no CertificateSigningRequest left behind.
cert="/proc/$leader/root/etc/joulie/agent.crt"
subject=$(openssl x509 -in "$cert" -noout -subject -nameopt RFC2253) || fail "read $cert"
[ "$subject" = "subject=CN=joulie:agent:install-test,O=joulie:agents" ] || fail "agent certificate: $subject"
openssl verify -CAfile "$cluster/client-ca.crt" "$cert" >/dev/null || fail "the agent certificate is not from the cluster's CA"
[ "$(stat -c '%a %U' "/proc/$leader/root/etc/joulie/agent.key")" = "600 root" ] || fail "agent key permissions"
csrs=$(kube 'print(" ".join(c.metadata.name for c in certs.list_certificate_signing_request().items))')
[ -z "$csrs" ] || fail "CSRs left behind: $csrs"
echo "ok: $subject, issued by the cluster's signer, no CSR left"

# The agent used it: the API server's audit log has the NodeHardware and
# the profile's status written by that user, and the profile's status
# reports the generation the agent enforced.
audit() { grep -F '"stage":"ResponseComplete"' "$cluster/audit.log" | grep -F '"username":"joulie:agent:install-test"' | grep -F "\"resource\":\"$1\"" | grep -cE '"code":20[01]' || true; }
[ "$(audit nodehardwares)" -gt 0 ] || fail "no NodeHardware write by joulie:agent:install-test in the audit log"
[ "$(audit nodepowerprofiles)" -gt 0 ] || fail "no NodePowerProfile status write by joulie:agent:install-test in the audit log"
observed=$(kube '
p = custom.get_cluster_custom_object("joulie.io", "v1alpha1", "nodepowerprofiles", "install-test")
print(p["status"]["observedGeneration"], p["status"]["cpu"]["result"])')
[ "$observed" = "1 applied" ] || fail "NodePowerProfile status: $observed"
echo "ok: NodeHardware and NodePowerProfile status written as joulie:agent:install-test; status: generation 1 applied"

# The role's approval module on its own: an approved request is left
# alone, a denied one is an error that says so.
approve() {
	ANSIBLE_LIBRARY=ansible/roles/joulie_agent/library netns ansible localhost -o -m joulie_csr_approve \
		-a "name=$1 kubeconfig=$cluster/admin.kubeconfig" 2>&1
}
request=$(openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout /dev/null \
	-subj "/O=joulie:agents/CN=joulie:agent:approve-test" 2>/dev/null | base64 -w0)
for name in approve-test deny-test; do
	kube "
certs.create_certificate_signing_request({'metadata': {'name': '$name'}, 'spec': {
    'request': '$request', 'signerName': 'kubernetes.io/kube-apiserver-client',
    'usages': ['digital signature', 'client auth']}})" >/dev/null || fail "create CSR $name"
done
kube '
c = certs.read_certificate_signing_request("deny-test")
c.status.conditions = [client.V1CertificateSigningRequestCondition(type="Denied", status="True", reason="Test", message="denied by the test")]
certs.replace_certificate_signing_request_approval("deny-test", c)' >/dev/null || fail "deny CSR deny-test"
out=$(approve approve-test) || fail "approve a pending CSR: $out"
grep -q 'CHANGED' <<<"$out" || fail "approving a pending CSR reported no change: $out"
out=$(approve approve-test) || fail "approve an approved CSR: $out"
grep -q 'SUCCESS' <<<"$out" || fail "approving an approved CSR changed it: $out"
rc=0
out=$(approve deny-test) || rc=$?
[ "$rc" -ne 0 ] && grep -q 'is denied (Test: denied by the test)' <<<"$out" || fail "approving a denied CSR: exit $rc: $out"
kube 'certs.delete_certificate_signing_request("approve-test"); certs.delete_certificate_signing_request("deny-test")' >/dev/null
echo "ok: joulie_csr_approve approves a pending request once and refuses a denied one"

# Purge after a rollout with an identity: the key, certificate, CA and
# kubeconfig the role wrote go with /etc/joulie, and the limit is restored.
inside apt-get purge -y joulie-agent >"$work/apt-purge-ansible.log" 2>&1 ||
	{ cat "$work/apt-purge-ansible.log" >&2; fail "apt purge after the rollout"; }
[ ! -e "/proc/$leader/root/etc/joulie" ] || fail "apt purge left /etc/joulie: $(ls "/proc/$leader/root/etc/joulie")"
[ "$(cat "$limit_file")" = 200000000 ] || fail "apt purge after the rollout did not restore the limit: $(cat "$limit_file")"
echo "ok: apt purge after the rollout removed the key, certificate and kubeconfig and restored 200 W"
