#!/usr/bin/python3
# Approves a CertificateSigningRequest through its approval subresource.
# kubernetes.core has no module for subresources, and this spares the
# control node a kubectl whose version must suit the cluster.

from __future__ import annotations

DOCUMENTATION = r"""
module: joulie_csr_approve
short_description: Approve a Kubernetes CertificateSigningRequest
description:
  - Adds the C(Approved) condition to a CertificateSigningRequest through
    its C(approval) subresource, as C(kubectl certificate approve) does.
  - A request that is already approved is left alone; a denied or failed
    one is an error, since approving it would not get it signed.
options:
  name:
    description: Name of the CertificateSigningRequest.
    required: true
    type: str
  kubeconfig:
    description:
      - Kubeconfig of an identity allowed to approve requests for the
        request's signer. Empty uses the Python client's default
        (C(KUBECONFIG), then C(~/.kube/config)).
    type: path
  reason:
    description: Reason recorded in the condition.
    type: str
    default: JoulieAnsibleApproval
  message:
    description: Message recorded in the condition.
    type: str
    default: Approved by the joulie_agent Ansible role
requirements:
  - kubernetes (the Python client, as for kubernetes.core)
"""

EXAMPLES = r"""
- name: Approve the node's request
  joulie_csr_approve:
    name: joulie-agent-node1-0123456789
    kubeconfig: ~/.kube/admin.conf
"""

RETURN = r"""
approved:
  description: Whether the request carries the Approved condition now.
  returned: success
  type: bool
"""

import datetime

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

try:
    from kubernetes import client, config
    from kubernetes.client.rest import ApiException

    HAS_KUBERNETES = True
except ImportError:
    HAS_KUBERNETES = False


def condition(csr, kind):
    for c in (csr.status and csr.status.conditions) or []:
        if c.type == kind and c.status == "True":
            return c
    return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            kubeconfig=dict(type="path"),
            reason=dict(type="str", default="JoulieAnsibleApproval"),
            message=dict(type="str", default="Approved by the joulie_agent Ansible role"),
        ),
        supports_check_mode=True,
    )
    if not HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes (python3-kubernetes)"))
    name = module.params["name"]
    try:
        config.load_kube_config(config_file=module.params["kubeconfig"] or None)
        api = client.CertificatesV1Api()
        csr = api.read_certificate_signing_request(name)
    except ApiException as e:
        module.fail_json(msg="read CertificateSigningRequest %s: %s %s" % (name, e.status, e.reason))
    except Exception as e:  # kubeconfig errors come in many types
        module.fail_json(msg="read CertificateSigningRequest %s: %s" % (name, e))

    for kind in ("Denied", "Failed"):
        c = condition(csr, kind)
        if c is not None:
            module.fail_json(
                msg="CertificateSigningRequest %s is %s (%s: %s); delete it and run again"
                % (name, kind.lower(), c.reason, c.message)
            )
    if condition(csr, "Approved") is not None:
        module.exit_json(changed=False, approved=True)
    if module.check_mode:
        module.exit_json(changed=True, approved=False)

    now = datetime.datetime.now(datetime.timezone.utc)
    csr.status = csr.status or client.V1CertificateSigningRequestStatus()
    csr.status.conditions = (csr.status.conditions or []) + [
        client.V1CertificateSigningRequestCondition(
            type="Approved",
            status="True",
            reason=module.params["reason"],
            message=module.params["message"],
            last_update_time=now,
        )
    ]
    try:
        api.replace_certificate_signing_request_approval(name, csr)
    except ApiException as e:
        module.fail_json(msg="approve CertificateSigningRequest %s: %s %s: %s" % (name, e.status, e.reason, e.body))
    module.exit_json(changed=True, approved=True)


if __name__ == "__main__":
    main()
