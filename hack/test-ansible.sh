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

# The package's unit may write only real sysfs; the test lets it write the
# fixture, before the role starts the agent.
inside mkdir -p /etc/systemd/system/joulie-agentd.service.d
printf '[Service]\nReadWritePaths=%s\n' "$fixture" |
	inside tee /etc/systemd/system/joulie-agentd.service.d/test-fixture.conf >/dev/null
inside systemctl daemon-reload

# Standalone (no API server here), so the kubeconfig step is skipped; the
# fixture host capped at 60% by a standalone eco profile.
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
          joulie_agent_kubeconfig: ""
          joulie_agent_standalone_profile:
            profile: eco
            cpu:
              packagePowerCapPctOfMax: 60
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
	if ! ansible-playbook -i "$work/inventory.yml" ansible/site.yml >"$work/ansible-$run.log" 2>&1; then
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
echo "ok: joulie-agentd active, fixture capped at 120 W by the configuration the role wrote"
