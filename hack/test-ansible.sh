#!/usr/bin/env bash
# The Ansible rollout test: ansible/site.yml installs, configures, starts
# and verifies the agent in a booted container (hack/test-install.sh boots
# it and calls this), through the community.docker.nsenter connection. It
# runs twice; the second run must change nothing.
#
# Usage: hack/test-ansible.sh INIT_PID PACKAGE WORKDIR
#   INIT_PID  the container's init as seen from this host
#   PACKAGE   the .deb on this host (the control node)
#   WORKDIR   where the inventory and the logs go
# The container must have the fixture host of hack/test-install.sh in
# /var/lib/joulie-fixture, and no joulie-agent installed.
set -euo pipefail
cd "$(dirname "$0")/.."

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

# The package's unit may write only real sysfs; the test lets it write the
# fixture, before the role starts the agent.
inside mkdir -p /etc/systemd/system/joulie-agentd.service.d
printf '[Service]\nReadWritePaths=%s\n' "$fixture" |
	inside tee /etc/systemd/system/joulie-agentd.service.d/test-fixture.conf >/dev/null
inside systemctl daemon-reload

# The cluster: the harness's control plane as a process, with the Helm
# chart's CRDs, RBAC and admission policy, and kube-controller-manager's
# CSR signer, so the role's identity step runs for real. The container has
# a private network, so the control plane, kubectl and Ansible's control
# node run in the container's network namespace (and this host's mount
# namespace): all of them, the agent included, meet on its loopback.
# kubectl, which the role approves requests with, is built from the
# harness's module: the same Kubernetes version as the server.
echo "-- build joulie-testcluster and kubectl (test/ module)"
mkdir -p "$work/bin"
# -race like the integration tests, which then reuse these packages.
(cd test && ${GO:-go} build -race -o "$work/bin/joulie-testcluster" ./cmd/joulie-testcluster &&
	${GO:-go} build -o "$work/bin/kubectl" k8s.io/kubernetes/cmd/kubectl) || fail "build the test cluster"
cluster=$work/cluster
rm -rf "$cluster"
netns "$work/bin/joulie-testcluster" -dir "$cluster" -chart packaging/helm/joulie >"$work/testcluster.log" 2>&1 &
cluster_pid=$!
trap 'kill "$cluster_pid" 2>/dev/null; wait "$cluster_pid" 2>/dev/null || true' EXIT
for _ in $(seq 180); do
	[ -e "$cluster/ready" ] && break
	kill -0 "$cluster_pid" 2>/dev/null || { cat "$work/testcluster.log" >&2; fail "joulie-testcluster exited"; }
	sleep 1
done
[ -e "$cluster/ready" ] || { cat "$work/testcluster.log" >&2; fail "joulie-testcluster not ready after 180 s"; }
cat "$work/testcluster.log"
export PATH="$work/bin:$PATH" KUBECONFIG="$cluster/admin.kubeconfig"
kubectl() { netns "$work/bin/kubectl" "$@"; }

# The node and its target, as the controller would leave them: eco, the
# CPU capped at 60% of its maximum.
kubectl create -f - <<'YAML' >/dev/null || fail "create the node and its NodePowerProfile"
apiVersion: v1
kind: Node
metadata:
  name: install-test
  labels:
    joulie.io/managed: "true"
---
apiVersion: joulie.io/v1alpha1
kind: NodePowerProfile
metadata:
  name: install-test
spec:
  profile: eco
  cpu:
    packagePowerCapPctOfMax: 60
YAML

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

for run in 1 2; do
	echo "-- ansible-playbook ansible/site.yml, run $run"
	if ! netns ansible-playbook -i "$work/inventory.yml" ansible/site.yml >"$work/ansible-$run.log" 2>&1; then
		cat "$work/ansible-$run.log" >&2
		fail "playbook run $run"
	fi
	grep -E 'msg": ".*install-test' "$work/ansible-$run.log" | sed 's/^ *"msg": /agent: /' || true
	echo "recap $run: $(recap "$work/ansible-$run.log")"
done
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
[ -z "$(kubectl get certificatesigningrequests -o name)" ] || fail "CSRs left behind: $(kubectl get certificatesigningrequests -o name)"
echo "ok: $subject, issued by the cluster's signer, no CSR left"

# The agent used it: the API server's audit log has the NodeHardware and
# the profile's status written by that user, and the profile's status
# reports the generation the agent enforced.
audit() { grep -F '"stage":"ResponseComplete"' "$cluster/audit.log" | grep -F '"username":"joulie:agent:install-test"' | grep -F "\"resource\":\"$1\"" | grep -cE '"code":20[01]' || true; }
[ "$(audit nodehardwares)" -gt 0 ] || fail "no NodeHardware write by joulie:agent:install-test in the audit log"
[ "$(audit nodepowerprofiles)" -gt 0 ] || fail "no NodePowerProfile status write by joulie:agent:install-test in the audit log"
observed=$(kubectl get nodepowerprofiles.joulie.io install-test -o jsonpath='{.status.observedGeneration} {.status.cpu.result}')
[ "$observed" = "1 applied" ] || fail "NodePowerProfile status: $observed"
echo "ok: NodeHardware and NodePowerProfile status written as joulie:agent:install-test; status: generation 1 applied"
